// Transaction-scoped advisory locks on what identifies a thing, shared by every writer of it, so a
// manual write and a discovery report of one address take turns. Always taken in one order (sorted,
// distinct) in one statement: no deadlock between writers. Each held key takes a slot of
// PostgreSQL's shared lock table: max_locks_per_transaction × (max_connections +
// max_prepared_transactions) slots for every transaction of the server (6,400 by default; about
// 12,000 advisory locks fit in practice, bench/bulkLocks.ts), and a transaction that finds it full
// fails with "out of shared memory", whoever filled it: keep what one transaction holds small.
// Keys: `ip:<subnet id>:<host(ip)>` an address in a subnet, `mac:<network id>:<MAC>`, `host:<network id>:<host id>`,
// and `subnets:<organization id>:<0..63>` (ADDRESS_SETS) the addresses of the organization's
// subnets whose id falls in that bucket.
//
// Addresses are locked at two grains. A writer of a few addresses (a host's create or
// update, a discovery batch) takes each address's `ip:` key exclusively and the `subnets:` bucket of
// each of their subnets SHARED. A bulk create, which may write 4,000 addresses in one transaction,
// does the same while that stays within 64 keys, and otherwise takes the buckets of its subnets
// EXCLUSIVELY (at most 64 keys, whatever its size; src/modules/hosts/bulkCreate.ts): it waits for,
// and holds off, every writer of an address in those buckets until it commits, instead of holding
// one slot per address. Writers of the same address still always meet: on the `ip:` key (both
// fine-grained) or on the bucket (shared against exclusive, or exclusive against exclusive).

/** A statement taking the locks of the keys `keysSql` selects (a column `k`). */
export const LOCKS = (keysSql: string) => `
  select count(pg_advisory_xact_lock(hashtextextended(k, 0))) as locked
  from (select distinct k from (${keysSql}) keys where k is not null order by k) ordered`;

/**
 * A statement taking the locks of the keys `keysSql` selects: columns `k` and `shared` (boolean),
 * each key SHARED or exclusive (exclusive if asked both ways), in the same order as LOCKS.
 */
export const MIXED_LOCKS = (keysSql: string) => `
  select count(case when shared then pg_advisory_xact_lock_shared(hashtextextended(k, 0))
                    else pg_advisory_xact_lock(hashtextextended(k, 0)) end) as locked
  from (select k, bool_and(shared) as shared from (${keysSql}) keys where k is not null group by k order by k) ordered`;

/** Buckets of an organization's subnets (`subnets:` keys): the most a bulk create holds for its addresses. */
export const ADDRESS_SETS = 64;

/** SQL: the `subnets:` key of the subnet `subnetSql` (uuid) in the organization `orgSql`. */
export const addressSetKey = (orgSql: string, subnetSql: string) =>
  `'subnets:' || ${orgSql}::text || ':' || (hashtext(${subnetSql}::text) & ${ADDRESS_SETS - 1})::text`;

/** SQL: the `ip:` key of address `ipSql` (inet) in subnet `subnetSql`. */
export const addressKey = (subnetSql: string, ipSql: string) => `'ip:' || ${subnetSql} || ':' || host(${ipSql})`;

/**
 * SQL selecting the keys (`k`, `shared`) a writer of a few addresses takes, for MIXED_LOCKS: each
 * address's own key exclusive, its subnet's bucket shared. `rows`: a relation (a CTE's name) with
 * columns subnet_id (uuid) and ip_address (inet).
 */
export const addressLockKeys = (orgSql: string, rows: string) => `
  select ${addressKey('r.subnet_id', 'r.ip_address')} as k, false as shared from ${rows} r
  union all select ${addressSetKey(orgSql, 'r.subnet_id')}, true from ${rows} r`;
