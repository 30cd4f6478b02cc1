// `npm run demo [-- <service url>]`: seeds a realistic network into a RUNNING service (start it first
// with `npm start`), through its public API: a new account, about 150 hosts in five subnets with a
// switch, containers, VMs, dependencies, tags and a few changes over time (scripts/realisticNetwork.ts,
// the network the web tests and screenshots use), and a second small network. Prints where to sign
// in. Writes no file.
import { randomBytes } from 'node:crypto';
import { apiCaller, buildRealisticNetwork } from './realisticNetwork.js';

export async function runDemo(base: string, log: (line: string) => void = console.log): Promise<{ email: string; password: string; networkId: string; hosts: number }> {
  const health = await fetch(`${base}/api/health`).then((r) => r.ok, () => false);
  if (!health) throw new Error(`no service answers at ${base}: start it first (npm start), or give its URL: npm run demo -- http://host:port`);
  const email = `demo-${randomBytes(3).toString('hex')}@example.test`;
  const password = `demo-${randomBytes(9).toString('base64url')}`;
  const anonymous = apiCaller(base, {});
  const account = await anonymous('POST', '/api/auth/register', { email, password, organization_name: 'Demo' });
  const login = await fetch(`${base}/api/auth/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ email, password }) });
  if (!login.ok) throw new Error(`sign-in refused: ${login.status} ${await login.text()}`);
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  const networkId = account.network_ids[0] as string;
  log(`seeding a realistic network into ${base} …`);
  const net = await buildRealisticNetwork(apiCaller(base, { cookie }), networkId, { changes: true });
  return { email, password, networkId, hosts: Object.keys(net.hosts).length };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const base = (process.argv[2] ?? `http://localhost:${process.env.PORT ?? 3000}`).replace(/\/$/, '');
  runDemo(base).then((d) => {
    console.log(`\n${d.hosts} hosts ready. Open ${base}/ and sign in as\n  email:    ${d.email}\n  password: ${d.password}`);
  }, (err) => {
    console.error(`demo: ${(err as Error).message}`);
    process.exit(1);
  });
}
