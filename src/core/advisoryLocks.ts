// Transaction-scoped advisory locks on what identifies a thing, shared by every writer of it, so a
// manual write and a discovery report of one address take turns. Always taken in one order (sorted,
// distinct) in one statement: no deadlock between writers. Each held key takes a slot of
// PostgreSQL's shared lock table (max_locks_per_transaction × max_connections, 6,400 by default).
// Keys: `ip:<subnet id>:<host(ip)>` an address in a subnet, `mac:<network id>:<MAC>`, `host:<network id>:<host id>`.

/** A statement taking the locks of the keys `keysSql` selects (a column `k`). */
export const LOCKS = (keysSql: string) => `
  select count(pg_advisory_xact_lock(hashtextextended(k, 0))) as locked
  from (select distinct k from (${keysSql}) keys where k is not null order by k) ordered`;
