// `npm run screenshots [-- <base url>]`: the README's pictures of the web application (docs/*.png),
// taken in headless Chromium against a running service (`npm start`, default http://localhost:3000).
// It registers a new organization and builds a small demo network through the public API, changes
// it (so the history and the diff have something to show), then visits the screens.
import { chromium } from 'playwright-core';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { ensureChromium } from './services.js';

const base = process.argv[2] ?? `http://localhost:${process.env.PORT ?? 3000}`;
const docs = fileURLToPath(new URL('../docs/', import.meta.url));
const email = `demo-${Date.now()}@example.test`;
const password = 'plum harbor lantern';

async function call(method: string, path: string, body?: unknown, cookie?: string) {
  const res = await fetch(base + path, { method, headers: { 'Content-Type': 'application/json', ...(cookie ? { Cookie: cookie } : {}) }, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = await res.json();
  if (!json.success) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return { data: json.data, res };
}

const registered = (await call('POST', '/api/auth/register', { email, password, organization_name: 'Demo' })).data;
const cookie = (await call('POST', '/api/auth/login', { email, password })).res.headers.get('set-cookie')!.split(';')[0]!;
const networkId: string = registered.network_ids[0];
const post = async (path: string, body: unknown) => (await call('POST', path, body, cookie)).data;

const subnets = [
  await post('/api/v1/subnets', { network_id: networkId, cidr: '10.1.0.0/24', name: 'office' }),
  await post('/api/v1/subnets', { network_id: networkId, cidr: '10.2.0.0/24', name: 'servers' }),
  await post('/api/v1/subnets', { network_id: networkId, cidr: '10.3.0.0/24', name: 'dmz' }),
];
const shop = await post('/api/v1/tags', { name: 'shop', color: 'Teal', is_application: true });
await post('/api/v1/tags', { name: 'production', color: 'Red' });
const kinds = [['nginx', 'Nginx', 443], ['postgres', 'PostgreSQL', 5432], ['redis', 'Redis', 6379], ['grafana', 'Grafana', 3000]] as const;
const hosts: any[] = [];
for (let i = 1; i <= 14; i++) {
  const subnet = subnets[i % 3]!;
  const [name, definition, number] = kinds[i % 4]!;
  const port = randomUUID();
  hosts.push(await post('/api/v1/hosts', {
    network_id: networkId, name: `${['desk', 'srv', 'edge'][i % 3]}-${String(i).padStart(2, '0')}`, hostname: `h${i}.example.lan`,
    ip_addresses: [{ subnet_id: subnet.id, ip_address: `${subnet.cidr.split('.').slice(0, 3).join('.')}.${10 + i}` }],
    ports: [{ id: port, number, protocol: 'Tcp' }],
    services: [{ name, service_definition: definition, tags: i % 4 < 2 ? [shop.id] : [], bindings: [{ type: 'Port', port_id: port }] }],
  }));
}
const svc = (i: number) => hosts[i]!.services[0].id;
await post('/api/v1/dependencies', { name: 'checkout', network_id: networkId, color: 'Blue', dependency_type: 'RequestPath', edge_style: 'Bezier', members: { type: 'Services', service_ids: [svc(2), svc(4), svc(8), svc(5)] } });
await post('/api/v1/dependencies', { name: 'cache', network_id: networkId, color: 'Red', dependency_type: 'HubAndSpoke', edge_style: 'SmoothStep', members: { type: 'Services', service_ids: [svc(1), svc(5), svc(9)] } });
const before = new Date().toISOString();
await new Promise((r) => setTimeout(r, 50));
await post('/api/v1/hosts', { network_id: networkId, name: 'srv-new', ip_addresses: [{ subnet_id: subnets[1]!.id, ip_address: '10.2.0.99' }] });
await call('DELETE', `/api/v1/hosts/${hosts[3]!.id}`, undefined, cookie);
await call('PUT', `/api/v1/hosts/${hosts[6]!.id}`, { id: hosts[6]!.id, name: 'srv-07-renamed', hidden: false, tags: [] }, cookie);

const browser = await chromium.launch({ executablePath: ensureChromium(), args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] });
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 860 } });
  await page.goto(`${base}/signin`);
  await page.fill('#email', email);
  await page.fill('#password', password);
  await page.click('button[type=submit]');
  await page.waitForSelector('#map-canvas[data-ready=true]', { timeout: 30_000 });
  await page.waitForTimeout(600);
  await page.screenshot({ path: `${docs}web-map.png` });
  await page.fill('#host-search', 'srv-10');
  await page.press('#host-search', 'Enter');
  await page.waitForSelector('#details .host-details');
  await page.waitForTimeout(600);
  await page.screenshot({ path: `${docs}web-map-details.png` });
  await page.goto(`${base}/networks/${networkId}/topology/diff?from=${encodeURIComponent(before)}`);
  await page.waitForFunction(() => /From/.test(document.querySelector('.status')?.textContent ?? ''), undefined, { timeout: 30_000 });
  await page.waitForTimeout(600);
  await page.screenshot({ path: `${docs}web-diff.png` });
  await page.goto(`${base}/hosts/${hosts[5]!.id}`);
  await page.waitForSelector('.host-details');
  await page.screenshot({ path: `${docs}web-host.png` });
  // The API docs (Swagger UI) with one operation open, its example body shown.
  await page.goto(`${base}/api/docs#/Hosts/createHost`);
  const createHost = page.locator('#operations-Hosts-createHost');
  await createHost.waitFor({ timeout: 30_000 });
  if (!(await createHost.locator('.opblock-body').count())) await createHost.locator('.opblock-summary').click();
  await createHost.locator('.opblock-body').waitFor();
  await createHost.scrollIntoViewIfNeeded();
  await page.evaluate(() => window.scrollBy(0, -12));
  await page.waitForTimeout(400);
  await page.screenshot({ path: `${docs}api-docs.png` });
  console.log(`docs/web-map.png, web-map-details.png, web-diff.png, web-host.png, api-docs.png (signed in as ${email})`);
} finally {
  await browser.close();
}
