import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createOrm, Db } from '../src/core/db.js';
import { ingestHost } from '../src/modules/discovery/ingest.js';
import { ensureServices } from '../scripts/services.js';
import { createDaemonKey, daemonClient, registerDaemon } from '../test/daemons/world.js';
import { hostReport, postSubnet } from '../test/discovery/reports.js';
import { prepareTemplate, startTestApp } from '../test/support/app.js';
import { createNetwork, registerTenant } from '../test/support/world.js';
const { databaseUrl, redisUrl } = await ensureServices();
process.env.DATABASE_URL = databaseUrl; process.env.REDIS_URL = redisUrl; process.env.LOG_LEVEL = 'silent';
await prepareTemplate();
const app = await startTestApp({ logLevel: 'silent' });
const t = await registerTenant(app.url, 'x');
const networkId = await createNetwork(app.url, t.owner, 'n');
const daemon = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, networkId)).key);
await registerDaemon(daemon, networkId);
const subnet = await postSubnet(daemon, networkId, '10.20.0.0/16');
const hex2 = (n: number) => (n & 255).toString(16).padStart(2, '0');
const report = (i: number) => hostReport(daemon as never, networkId, {
  interfaces: [0, 1].map((k) => ({ subnet_id: subnet.id, ip_address: `10.20.${((256 + 2 * i + k) >> 8) & 255}.${(256 + 2 * i + k) & 255}`, mac_address: `02:00:00:00:${hex2((2 * i + k) >> 8)}:${hex2(2 * i + k)}` })),
  ports: [{ number: 22 }, { number: 80 }, { number: 443 }, { number: 5432 }, { number: 161, protocol: 'Udp' }],
  services: [{ name: 'OpenSSH', ports: [22] }, { name: 'Nginx', ports: [80, 443] }, { name: 'PostgreSQL', ports: [5432, 161] }],
}) as any;
const admin = new pg.Client({ connectionString: app.databaseUrl }); await admin.connect();
const dbname = new URL(app.databaseUrl).pathname.slice(1);
await admin.query(`alter database "${dbname}" set session_preload_libraries = 'auto_explain'`);
await admin.query(`alter database "${dbname}" set auto_explain.log_min_duration = '${process.env.MIN ?? 20}'`);
await admin.query(`alter database "${dbname}" set auto_explain.log_nested_statements = on`);
await admin.query(`alter database "${dbname}" set auto_explain.log_analyze = on`);
await admin.query(`alter database "${dbname}" set auto_explain.log_triggers = on`);
const orm = await createOrm(app.databaseUrl, 2);
const ctx = { organizationId: t.orgId, networkId, daemonId: daemon.id };
const N = Number(process.env.N ?? 300);
const t0 = performance.now();
for (let i = 0; i < N; i++) await ingestHost(new Db(orm.em.fork()), ctx, report(i));
console.log('per host ms', (performance.now() - t0) / N);
await orm.close(true); await admin.end(); await app.close();
process.exit(0);
