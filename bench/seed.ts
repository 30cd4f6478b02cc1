// Seeds the benchmark network with set-based SQL (generate_series, no HTTP): N hosts, each with
// 2 IP addresses, 5 ports, 3 services and 5 bindings, then grows the history to at least
// `minHistory` states by updating every row in rounds. The history triggers stay ON throughout,
// so every state in the *_history tables was written by the same code path the API uses.
import pg from 'pg';

export interface SeedOptions {
  databaseUrl: string;
  organizationId: string;
  networkId: string;
  subnetId: string;
  /** Optional: spread the hosts over these subnets in equal blocks (their addresses 10.<block>.x.y) instead of `subnetId`. */
  subnetIds?: string[];
  hosts: number;
  minHistory: number;
  /** Hosts per transaction in the growth rounds. */
  batchHosts: number;
  /** Connections working in parallel (disjoint hosts, so no lock waits). */
  parallel: number;
  log: (line: string) => void;
}

export interface SeedResult {
  seconds: { insert: number; growth: number; vacuumAnalyze: number; total: number };
  rounds: number;
  /** An instant between two rounds in the middle of the history: every entity has exactly one state valid then. */
  atInstant: string;
  /** Live rows and history rows (states) per table. */
  tables: Record<string, { live: number; history: number }>;
  totalHistory: number;
}

export const INVENTORY_TABLES = ['hosts', 'ip_addresses', 'ports', 'services', 'bindings', 'interfaces', 'subnets', 'networks'] as const;
const CHILDREN_PER_HOST = { ip_addresses: 2, ports: 5, services: 3, bindings: 5 };

const seconds = (from: number) => Math.round((performance.now() - from) / 10) / 100;

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

export async function seed(opts: SeedOptions): Promise<SeedResult> {
  const started = performance.now();
  // Seeding durability is irrelevant (the database is thrown away): skip the WAL flush per commit.
  const pool = new pg.Pool({ connectionString: opts.databaseUrl, max: opts.parallel, options: '-c synchronous_commit=off -c TimeZone=UTC' });
  try {
    const { org, net, subnet } = { org: opts.organizationId, net: opts.networkId, subnet: opts.subnetId };

    // ---- 1. Live rows ----------------------------------------------------------------------
    // Ids are generated once into unlogged helper tables so children can reference their parents
    // and the growth rounds can address hosts in batches by number.
    let t = performance.now();
    await inTransaction(pool, async (c) => {
      await c.query(`create unlogged table bench_seed_hosts as select n, gen_random_uuid() as id from generate_series(1, $1::int) n`, [opts.hosts]);
      await c.query(`create unlogged table bench_seed_ports as select h.n, k, gen_random_uuid() as id from bench_seed_hosts h, generate_series(0, 4) k`);
      await c.query(`create unlogged table bench_seed_ips as select h.n, k, gen_random_uuid() as id from bench_seed_hosts h, generate_series(0, 1) k`);
      await c.query(`create unlogged table bench_seed_services as select h.n, k, gen_random_uuid() as id from bench_seed_hosts h, generate_series(0, 2) k`);
      for (const tbl of ['hosts', 'ports', 'ips', 'services']) await c.query(`create unique index on bench_seed_${tbl} (n${tbl === 'hosts' ? '' : ', k'})`);
      // created_at 1 ms apart (explicit values are kept by history_stamp), so the default order is realistic.
      await c.query(
        `insert into hosts (id, organization_id, network_id, name, hostname, description, created_at, last_seen_at)
         select id, $1, $2, format('host-%s', lpad(n::text, 5, '0')), format('host-%s.lab.example', lpad(n::text, 5, '0')),
                'seeded host', now() - interval '1 day' + n * interval '1 millisecond', now()
         from bench_seed_hosts`,
        [org, net],
      );
      // Host n's block: (n - 1) * blocks / hosts; within a block its addresses count from 10.<block>.0.2.
      const subnets = opts.subnetIds?.length ? opts.subnetIds : [subnet];
      const perBlock = Math.ceil(opts.hosts / subnets.length);
      await c.query(
        `insert into ip_addresses (id, organization_id, network_id, host_id, subnet_id, ip_address, mac_address, name, position, last_seen_at)
         select i.id, $1, $2, h.id, ($3::uuid[])[(i.n - 1) / $4 + 1], '10.0.0.0'::inet + (((i.n - 1) / $4) * 65536 + ((i.n - 1) % $4 + 1) * 2 + i.k),
                upper(regexp_replace(lpad(to_hex(i.n * 2 + i.k), 8, '0'), '(..)(..)(..)(..)', '02:00:\\1:\\2:\\3:\\4')),
                'eth' || i.k, i.k, now()
         from bench_seed_ips i join bench_seed_hosts h using (n)`,
        [org, net, subnets, perBlock],
      );
      await c.query(
        `insert into ports (id, organization_id, network_id, host_id, number, protocol, type, last_seen_at)
         select p.id, $1, $2, h.id, d.number, d.protocol, d.type, now()
         from bench_seed_ports p join bench_seed_hosts h using (n)
         join (values (0, 22, 'Tcp', 'Ssh'), (1, 80, 'Tcp', 'Http'), (2, 443, 'Tcp', 'Https'), (3, 5432, 'Tcp', 'PostgreSQL'), (4, 9100, 'Tcp', 'NodeExporter'))
           d(k, number, protocol, type) on d.k = p.k`,
        [org, net],
      );
      await c.query(
        `insert into services (id, organization_id, network_id, host_id, name, service_definition, position, last_seen_at)
         select s.id, $1, $2, h.id, d.name, d.name, s.k, now()
         from bench_seed_services s join bench_seed_hosts h using (n)
         join (values (0, 'OpenSSH'), (1, 'Nginx'), (2, 'PostgreSQL')) d(k, name) on d.k = s.k`,
        [org, net],
      );
      // 5 port bindings: ssh→22, nginx→80 and 443 on the first address, postgres→5432 and 9100.
      await c.query(
        `insert into bindings (id, organization_id, network_id, service_id, type, port_id, ip_address_id, last_seen_at)
         select gen_random_uuid(), $1, $2, s.id, 'Port', p.id, case when d.on_ip then i.id end, now()
         from (values (0, 0, false), (1, 1, true), (1, 2, true), (2, 3, false), (2, 4, false)) d(service_k, port_k, on_ip)
         join bench_seed_services s on s.k = d.service_k
         join bench_seed_ports p on p.n = s.n and p.k = d.port_k
         join bench_seed_ips i on i.n = s.n and i.k = 0`,
        [org, net],
      );
    });
    const insertSeconds = seconds(t);
    opts.log(`  live rows inserted in ${insertSeconds} s`);

    // ---- 2. History: every round changes every row once (one new state each) ----------------
    t = performance.now();
    const liveHistory = await countHistory(pool);
    const perRound = opts.hosts * (1 + Object.values(CHILDREN_PER_HOST).reduce((a, b) => a + b, 0));
    const rounds = Math.max(2, Math.ceil((opts.minHistory - liveHistory) / perRound));
    const middle = Math.floor(rounds / 2);
    let atInstant = '';
    for (let round = 1; round <= rounds; round++) {
      const r = performance.now();
      // Disjoint host ranges per connection; each batch is one transaction, i.e. one instant.
      const batches: Array<[number, number]> = [];
      for (let lo = 1; lo <= opts.hosts; lo += opts.batchHosts) batches.push([lo, Math.min(opts.hosts, lo + opts.batchHosts - 1)]);
      const queue = [...batches];
      await Promise.all(Array.from({ length: opts.parallel }, async () => {
        for (let b = queue.shift(); b; b = queue.shift()) await growBatch(pool, round, b[0], b[1]);
      }));
      opts.log(`  history round ${round}/${rounds}: ${perRound} states in ${seconds(r)} s`);
      if (round === middle) {
        // Taken after the round committed and before the next starts: a clean "middle" instant.
        const { rows } = await pool.query(`select to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at`);
        atInstant = rows[0].at;
        await new Promise((resolve) => setTimeout(resolve, 5)); // strictly before the next round's states
      }
    }
    const growthSeconds = seconds(t);

    // ---- 3. Statistics ---------------------------------------------------------------------
    // VACUUM (not only ANALYZE): the rounds left 1 dead tuple per update in the live tables; autovacuum
    // would clean those soon in a real deployment, and the visibility map lets index-only scans work.
    t = performance.now();
    await pool.query('drop table bench_seed_hosts, bench_seed_ports, bench_seed_ips, bench_seed_services');
    for (const tbl of INVENTORY_TABLES) {
      await pool.query(`vacuum (analyze) ${tbl}`);
      await pool.query(`vacuum (analyze) ${tbl}_history`);
    }
    const vacuumSeconds = seconds(t);

    const tables: SeedResult['tables'] = {};
    for (const tbl of INVENTORY_TABLES) {
      const { rows } = await pool.query(`select (select count(*) from ${tbl})::int as live, (select count(*) from ${tbl}_history)::int as history`);
      tables[tbl] = rows[0];
    }
    const totalHistory = Object.values(tables).reduce((a, x) => a + x.history, 0);
    return {
      seconds: { insert: insertSeconds, growth: growthSeconds, vacuumAnalyze: vacuumSeconds, total: seconds(started) },
      rounds, atInstant, tables, totalHistory,
    };
  } finally {
    await pool.end();
  }
}

async function countHistory(pool: pg.Pool): Promise<number> {
  const sum = INVENTORY_TABLES.map((t) => `(select count(*) from ${t}_history)`).join(' + ');
  return Number((await pool.query(`select ${sum} as n`)).rows[0].n);
}

/**
 * One state per row of hosts lo..hi and all their children: a rename for hosts, IP addresses and
 * services, a new discovery id for ports and bindings (any non-volatile column makes a state).
 */
async function growBatch(pool: pg.Pool, round: number, lo: number, hi: number): Promise<void> {
  await inTransaction(pool, async (c) => {
    // Same three parameters for every statement; `$1::int > 0` (always true) only gives $1 a type
    // where the statement does not otherwise use the round number.
    const p = [round, lo, hi];
    await c.query(
      `update hosts h set name = format('host-%s r%s', lpad(s.n::text, 5, '0'), $1::int), description = format('seeded host, round %s', $1::int)
       from bench_seed_hosts s where h.id = s.id and s.n between $2 and $3`, p);
    await c.query(
      `update ip_addresses i set name = format('eth%s r%s', i.position, $1::int)
       from bench_seed_hosts s where i.host_id = s.id and s.n between $2 and $3`, p);
    await c.query(
      `update ports x set first_discovery_id = gen_random_uuid()
       from bench_seed_hosts s where x.host_id = s.id and s.n between $2 and $3 and $1::int > 0`, p);
    await c.query(
      `update services v set name = format('%s r%s', v.service_definition, $1::int)
       from bench_seed_hosts s where v.host_id = s.id and s.n between $2 and $3`, p);
    await c.query(
      `update bindings b set first_discovery_id = gen_random_uuid()
       from bench_seed_services v join bench_seed_hosts s using (n)
       where b.service_id = v.id and s.n between $2 and $3 and $1::int > 0`, p);
  });
}
