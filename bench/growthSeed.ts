// Seeding for the growth benchmark (bench/growth.ts): an organization's network grown to N hosts in
// set-based SQL (generate_series), each host with 2 IP addresses, 5 ports, 3 services and 5 bindings
// (as bench/seed.ts), and each of those rows given `rounds` past states.
//
// The live rows are inserted with every trigger on (history, events, digests): their open state is
// written by the history trigger, as for any write. The PAST states are inserted directly into the
// twins (x_history), which is what history_record would have written had the rows been updated
// `rounds` times, one hour apart, before the insert: per id, contiguous and non-overlapping
// [valid_from, valid_to) ranges ending at the open state's valid_from, all closed, so the open state
// stays the only one with valid_to null. Updating 1.6 million rows 6 times through the triggers would
// take most of an hour at 100,000 hosts; the states read the same either way.
import pg from 'pg';

export const CHILD_TABLES = ['ip_addresses', 'ports', 'services', 'bindings'] as const;
export const SEEDED_TABLES = ['hosts', ...CHILD_TABLES] as const;
/** Live rows per seeded host (the host, 2 addresses, 5 ports, 3 services, 5 bindings). */
export const ROWS_PER_HOST = 16;
export const HOSTS_PER_SUBNET = 250;
/** Past states are this far apart. */
export const STATE_STEP = '1 hour';

export interface GrowOrg {
  organizationId: string;
  networkId: string;
  /** Host numbers already seeded (1..from) are kept; from+1..to are added. */
  from: number;
  to: number;
  /** Past states per row (so rounds + 1 states per row). */
  rounds: number;
  /** Every tagEvery-th host carries `tagId` (the filtered list's filter). */
  tagId: string | null;
  tagEvery: number;
  /** Fixed instant of the run; created_at = base - 2 days + n ms, so every host was created before any of its states. */
  base: string;
  /** Distinguishes this organization's MACs (4th byte) and subnets (second octet). */
  orgIndex: number;
}

/** Runs fn in one transaction on its own client. */
async function inTransaction(pool: pg.Pool, fn: (c: pg.PoolClient) => Promise<void>): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    await fn(client);
    await client.query('commit');
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** Column names of a live table, in order (its twin has the same ones plus valid_to). */
async function columnsOf(pool: pg.Pool, table: string): Promise<string[]> {
  const { rows } = await pool.query(
    `select column_name from information_schema.columns where table_schema = current_schema() and table_name = $1 order by ordinal_position`, [table]);
  return rows.map((r) => r.column_name as string);
}

/** What a past state changes relative to the open one (any non-volatile change makes a state). */
const PAST_OVERRIDES: Record<string, Record<string, string>> = {
  hosts: { name: `left(h.name, 80) || ' r' || k.k`, description: `'seeded host, ' || k.k || ' states ago'` },
  ip_addresses: { name: `coalesce(h.name, 'eth') || ' r' || k.k` },
  services: { name: `left(h.name, 80) || ' r' || k.k` },
  ports: { first_discovery_id: 'gen_random_uuid()' },
  bindings: { first_discovery_id: 'gen_random_uuid()' },
};

/**
 * Adds hosts from+1..to to the organization's network, chunked (one transaction per chunk, `parallel`
 * chunks at once). Subnets: one /22 per HOSTS_PER_SUBNET hosts, 10.<orgIndex * 16 + block / 64>.x.
 */
export async function growOrg(databaseUrl: string, o: GrowOrg, opts: { chunk: number; parallel: number; log: (s: string) => void }): Promise<void> {
  if (o.to <= o.from) return;
  const pool = new pg.Pool({ connectionString: databaseUrl, max: opts.parallel, options: '-c synchronous_commit=off -c TimeZone=UTC' });
  try {
    const columns = Object.fromEntries(await Promise.all(SEEDED_TABLES.map(async (t) => [t, await columnsOf(pool, t)] as const)));
    // Subnets first (one statement): every block the new hosts fall into.
    await pool.query(
      `insert into subnets (id, organization_id, network_id, cidr, name, subnet_type)
       select gen_random_uuid(), $1, $2, set_masklen('10.0.0.0'::inet + ($5::bigint * 16 * 65536 + b * 1024), 22)::cidr, 'growth-' || b, 'Lan'
       from generate_series(($3::int) / ${HOSTS_PER_SUBNET}, ($4::int - 1) / ${HOSTS_PER_SUBNET}) b
       where not exists (select 1 from subnets s where s.network_id = $2 and s.name = 'growth-' || b)`,
      [o.organizationId, o.networkId, o.from, o.to, o.orgIndex],
    );
    const chunks: Array<[number, number]> = [];
    for (let lo = o.from + 1; lo <= o.to; lo += opts.chunk) chunks.push([lo, Math.min(o.to, lo + opts.chunk - 1)]);
    const queue = [...chunks];
    let done = 0;
    await Promise.all(Array.from({ length: opts.parallel }, async () => {
      for (let c = queue.shift(); c; c = queue.shift()) {
        const t = performance.now();
        await inTransaction(pool, (client) => seedChunk(client, o, c[0], c[1], columns));
        // Fresh statistics for the next chunk's triggers: planned on those of the empty tables, the kept
        // counts' per-host reads took the (organization, network) index and fetched every host and
        // address per row (billions of index tuples by 90,000 hosts, minutes per chunk).
        await pool.query('analyze hosts, ip_addresses');
        done += c[1] - c[0] + 1;
        opts.log(`    org ${o.orgIndex}: hosts ${c[0]}..${c[1]} in ${Math.round(performance.now() - t)} ms (${done}/${o.to - o.from})`);
      }
    }));
  } finally {
    await pool.end();
  }
}

/** Seconds spent per kind of seeding statement (summed over chunks), for the bench's report. */
export const seedTimings: Record<string, number> = {};

async function seedChunk(client: pg.PoolClient, o: GrowOrg, lo: number, hi: number, columns: Record<string, string[]>): Promise<void> {
  const c = {
    query: async (sql: string, params?: unknown[]) => {
      const t = performance.now();
      const out = await client.query(sql, params);
      const label = /^\s*(create temp table \w+|create index|insert into \w+)/.exec(sql)?.[1] ?? sql.trim().slice(0, 30);
      seedTimings[label] = (seedTimings[label] ?? 0) + (performance.now() - t) / 1000;
      return out;
    },
  };
  const p = [o.organizationId, o.networkId];
  // Ids first (temporary tables, dropped at commit), so children and past states can find their rows.
  await c.query(`create temp table g_hosts on commit drop as select n, gen_random_uuid() as id, (n - 1) / ${HOSTS_PER_SUBNET} as block from generate_series(${lo}, ${hi}) n`);
  await c.query(`create temp table g_subnets on commit drop as
                 select replace(name, 'growth-', '')::int as block, id from subnets where network_id = $1 and name like 'growth-%'`, [o.networkId]);
  await c.query(`create temp table g_ip_addresses on commit drop as select h.n, k, gen_random_uuid() as id from g_hosts h, generate_series(0, 1) k`);
  await c.query(`create temp table g_ports on commit drop as select h.n, k, gen_random_uuid() as id from g_hosts h, generate_series(0, 4) k`);
  await c.query(`create temp table g_services on commit drop as select h.n, k, gen_random_uuid() as id from g_hosts h, generate_series(0, 2) k`);
  await c.query(`create temp table g_bindings on commit drop as
                 select gen_random_uuid() as id, s.id as service_id, pt.id as port_id, case when d.on_ip then i.id end as ip_id
                 from (values (0, 0, false), (1, 1, true), (1, 2, true), (2, 3, false), (2, 4, false)) d(service_k, port_k, on_ip)
                 join g_services s on s.k = d.service_k
                 join g_ports pt on pt.n = s.n and pt.k = d.port_k
                 join g_ip_addresses i on i.n = s.n and i.k = 0`);
  for (const t of ['g_hosts', 'g_ip_addresses', 'g_ports', 'g_services', 'g_bindings']) await c.query(`create index on ${t} (id)`);

  await c.query(
    `insert into hosts (id, organization_id, network_id, name, hostname, description, tags, created_at, last_seen_at)
     select id, $1, $2, format('host-%s', lpad(n::text, 6, '0')), format('host-%s.org%s.example', lpad(n::text, 6, '0'), $5::int),
            'seeded host', case when $3::uuid is not null and n % $4::int = 0 then array[$3::uuid] else '{}' end,
            $6::timestamptz - interval '2 days' + n * interval '1 millisecond', now()
     from g_hosts`,
    [...p, o.tagId, o.tagEvery, o.orgIndex, o.base],
  );
  // Addresses: host n's in its block's /22, 10.<orgIndex*16 + block/64>.<…>; MACs 00:1A:2B:<org>:<2 bytes> (universal, so they are identity).
  await c.query(
    `insert into ip_addresses (id, organization_id, network_id, host_id, subnet_id, ip_address, mac_address, name, position, last_seen_at)
     select i.id, $1, $2, h.id, s.id, '10.0.0.0'::inet + ($3::bigint * 16 * 65536 + h.block * 1024 + 2 + ((i.n - 1) % ${HOSTS_PER_SUBNET}) * 2 + i.k),
            upper(format('00:1a:2b:%s:%s:%s', lpad(to_hex($3::int), 2, '0'), lpad(to_hex(((i.n * 2 + i.k) >> 8) & 255), 2, '0'), lpad(to_hex((i.n * 2 + i.k) & 255), 2, '0'))),
            'eth' || i.k, i.k, now()
     from g_ip_addresses i join g_hosts h using (n) join g_subnets s on s.block = h.block`,
    [...p, o.orgIndex],
  );
  await c.query(
    `insert into ports (id, organization_id, network_id, host_id, number, protocol, type, last_seen_at)
     select x.id, $1, $2, h.id, d.number, d.protocol, d.type, now()
     from g_ports x join g_hosts h using (n)
     join (values (0, 22, 'Tcp', 'Ssh'), (1, 80, 'Tcp', 'Http'), (2, 443, 'Tcp', 'Https'), (3, 5432, 'Tcp', 'PostgreSQL'), (4, 9100, 'Tcp', 'NodeExporter'))
       d(k, number, protocol, type) on d.k = x.k`,
    p,
  );
  await c.query(
    `insert into services (id, organization_id, network_id, host_id, name, service_definition, position, last_seen_at)
     select s.id, $1, $2, h.id, d.name, d.name, s.k, now()
     from g_services s join g_hosts h using (n)
     join (values (0, 'OpenSSH'), (1, 'Nginx'), (2, 'PostgreSQL')) d(k, name) on d.k = s.k`,
    p,
  );
  await c.query(
    `insert into bindings (id, organization_id, network_id, service_id, type, port_id, ip_address_id, last_seen_at)
     select id, $1, $2, service_id, 'Port', port_id, ip_id, now() from g_bindings`,
    p,
  );

  // Past states, straight into the twins: state k (1 = the latest closed one) is valid
  // [open.valid_from - k·step, open.valid_from - (k-1)·step).
  for (const table of SEEDED_TABLES) {
    const cols = columns[table]!;
    const overrides: Record<string, string> = {
      ...PAST_OVERRIDES[table],
      valid_from: `h.valid_from - k.k * interval '${STATE_STEP}'`,
      updated_at: `h.valid_from - k.k * interval '${STATE_STEP}'`,
    };
    const select = cols.map((col) => overrides[col] ?? `h.${col}`).join(', ');
    await c.query(
      `insert into ${table}_history (${cols.join(', ')}, valid_to)
       select ${select}, h.valid_from - (k.k - 1) * interval '${STATE_STEP}'
       from ${table}_history h join g_${table} g on g.id = h.id cross join generate_series(1, $1::int) k(k)
       where h.valid_to is null`,
      [o.rounds],
    );
  }
}

/**
 * Runs `seed` (the seeding of one point: growOrg for each organization) with the twins' secondary
 * indexes dropped, then builds them again and answers how long that took. Inserting millions of
 * past states into tables whose indexes are far larger than shared_buffers is random index I/O, a
 * full-page WAL image per touched page after every checkpoint: at 100,000 hosts (13 million states)
 * the twins' inserts were 1,600 of the seed's 2,070 statement-seconds (plain schema, load ~14).
 * Built by sorting afterwards, the same indexes cost a fraction of that. Unique indexes and those
 * behind constraints stay (the capture triggers and the seed's own reads use the open-state index).
 * On the partitioned schema the parent's index is dropped and created again, partitions included.
 */
export async function withoutHistoryIndexes(databaseUrl: string, seed: () => Promise<void>, log: (s: string) => void = () => undefined): Promise<{ indexes: number; rebuildSeconds: number }> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1, options: '-c maintenance_work_mem=512MB' });
  try {
    const { rows } = await pool.query<{ name: string; def: string }>(
      `select quote_ident(ic.relname) as name, pg_get_indexdef(i.indexrelid) as def
       from pg_index i join pg_class c on c.oid = i.indrelid join pg_class ic on ic.oid = i.indexrelid
       where c.relnamespace = current_schema()::regnamespace and c.relname = any($1::text[])
         and not i.indisunique and not i.indisexclusion and not exists (select 1 from pg_constraint k where k.conindid = i.indexrelid)
       order by ic.relname`,
      [SEEDED_TABLES.map((t) => `${t}_history`)],
    );
    for (const r of rows) await pool.query(`drop index ${r.name}`);
    try {
      await seed();
    } finally {
      const t = performance.now();
      // pg_get_indexdef says ON ONLY for a partitioned table's index, which would build no partition's.
      for (const r of rows) {
        const t1 = performance.now();
        await pool.query(r.def.replace(/ ON ONLY /, ' ON '));
        log(`    ${r.name} built in ${Math.round(performance.now() - t1)} ms`);
      }
      const rebuildSeconds = Math.round((performance.now() - t) / 100) / 10;
      log(`    rebuilt ${rows.length} history indexes in ${rebuildSeconds} s`);
      seedTimings['rebuild history indexes'] = (seedTimings['rebuild history indexes'] ?? 0) + rebuildSeconds;
    }
    return { indexes: rows.length, rebuildSeconds: seedTimings['rebuild history indexes'] ?? 0 };
  } finally {
    await pool.end();
  }
}

/**
 * SCD2 check of the seeded twins on a sample of ids per table: per id, exactly one open state,
 * no two states overlapping, and no gap between consecutive states. Answers the problems found.
 */
export async function checkHistory(databaseUrl: string, organizationId: string, sample = 500): Promise<string[]> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  try {
    const problems: string[] = [];
    for (const table of SEEDED_TABLES) {
      const { rows } = await pool.query(
        `with ids as (select id from ${table} where organization_id = $1 order by random() limit $2),
              states as (
                select h.id, h.valid_from, h.valid_to, lag(h.valid_to) over (partition by h.id order by h.valid_from) as previous_to
                from ${table}_history h join ids using (id))
         select count(distinct id)::int as ids, count(*)::int as states,
                count(*) filter (where valid_to is null)::int as open,
                count(*) filter (where previous_to is not null and previous_to <> valid_from)::int as gaps_or_overlaps
         from states`,
        [organizationId, sample],
      );
      const r = rows[0];
      if (r.open !== r.ids) problems.push(`${table}: ${r.open} open states for ${r.ids} ids`);
      if (r.gaps_or_overlaps) problems.push(`${table}: ${r.gaps_or_overlaps} states not starting where the previous one ended`);
    }
    return problems;
  } finally {
    await pool.end();
  }
}
