// The page of a share link in real Chromium: the read-only map without signing in, nothing but the
// link's own API, redrawn when its network changes; a revoked link says so.
import { expect } from 'chai';
import { call, expectOk } from '../support/client.js';
import { login } from '../support/world.js';
import { expectNoProblems, openPage, webWorld } from '../web/browser.js';

describe('share links: the page', function () {
  this.timeout(120_000);
  const world = webWorld();

  it('draws the shared map read only, reads only /api/share/<token>/…, follows changes, and says when the link is revoked', async () => {
    const { app, user } = world;
    const owner = await login(app.url, user.email, user.password);
    const post = async (path: string, body: unknown) => expectOk(await call(app.url, 'POST', path, { auth: owner, body }), 201);
    const subnet = await post('/api/v1/subnets', { cidr: '10.9.0.0/24', name: 'lan', network_id: user.networkId });
    const host = await post('/api/v1/hosts', { name: 'web-01', network_id: user.networkId });
    await post('/api/v1/ip-addresses', { host_id: host.id, subnet_id: subnet.id, ip_address: '10.9.0.5' });
    const link = await post(`/api/v1/networks/${user.networkId}/share-links`, { expires_at: new Date(Date.now() + 86_400_000).toISOString(), label: 'wall' });

    const w = await openPage(world.browser, app.url, [/404/]);
    const requested: string[] = [];
    w.page.on('request', (r) => { const u = new URL(r.url()); if (u.pathname.startsWith('/api/')) requested.push(u.pathname); });
    try {
      await w.page.goto(`${app.url}/share/${link.token}`);
      await w.page.waitForSelector('#map-canvas[data-ready=true]', { timeout: 20_000 });
      expect(await w.page.textContent('h1')).to.equal('Default: wall');
      expect(await w.page.locator('header.top, nav, #sign-out, a[href]').count(), 'no shell, no link elsewhere').to.equal(0);
      const before = Number(await w.page.getAttribute('#map-canvas', 'data-nodes'));
      expect(before).to.be.greaterThan(0);

      // A change of the network: the page reads the map again (its stream said so).
      const other = await post('/api/v1/hosts', { name: 'web-02', network_id: user.networkId });
      await post('/api/v1/ip-addresses', { host_id: other.id, subnet_id: subnet.id, ip_address: '10.9.0.6' });
      await w.page.waitForFunction((n) => Number(document.querySelector('#map-canvas')?.getAttribute('data-nodes')) > n, before, { timeout: 20_000 });

      const paths = [...new Set(requested.map((p) => p.replace(link.token, '<token>')))];
      expect(paths.every((p) => p.startsWith('/api/share/<token>/')), paths.join(', ')).to.equal(true);
      expectNoProblems(w);

      expectOk(await call(app.url, 'DELETE', `/api/v1/networks/${user.networkId}/share-links/${link.share_link.id}`, { auth: owner }));
      await w.page.reload();
      await w.page.waitForSelector('text=This link does not open a map', { timeout: 20_000 });
    } finally {
      await w.close();
    }
  });
});
