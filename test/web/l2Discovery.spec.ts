// The L2 view drawn from what a daemon's SNMP walks report (issue 25.1): LLDP links solid, hosts
// placed by a switch's forwarding table dashed, each with its legend line.
// SCREENSHOTS=1 writes docs/web-l2-snmp.png (1440×900).
import { expect } from 'chai';
import { expectNoProblems, mapSnapshot, openPage, signIn, waitForMap, webWorld } from './browser.js';
import { createDaemonKey, daemonClient, registerDaemon } from '../daemons/world.js';
import { hostReport, postHost, postSubnet } from '../discovery/reports.js';
import { login } from '../support/world.js';
import { waitFor } from '../workers/support.js';

describe('web: the l2 view from SNMP', () => {
  const world = webWorld({ perFile: true });

  it('LLDP links are solid, forwarding-table placements dashed, and the legend names both', async () => {
    const net = world.user.networkId;
    const d = daemonClient(world.app.url, (await createDaemonKey(world.app.url, await login(world.app.url, world.user.email, world.user.password), net)).key);
    await registerDaemon(d, net);
    const lan = await postSubnet(d, net, '10.1.0.0/24');
    const report = (name: string, ip: string, mac: string, entries: unknown[] = [], host: Record<string, unknown> = {}) => {
      const r = hostReport(d, net, { name, hostname: null, interfaces: [{ subnet_id: lan.id, ip_address: ip, mac_address: mac }] });
      return { ...r, host: { ...r.host, ...host }, if_entries: entries, collections: { if_table: 'complete', fdb: 'complete', lldp: 'complete' } };
    };
    const port = (i: number, extra: Record<string, unknown> = {}) => ({ if_index: i, if_name: `ge-0/0/${i}`, ...extra });
    const pcs = [...Array(12).keys()].map((k) => [`pc-${k}`, `10.1.0.${50 + k}`, `00:1B:21:00:10:${String(k).padStart(2, '0')}`] as const);
    await postHost(d, report('core-sw', '10.1.0.1', '00:1B:21:00:00:01', [
      port(1, { lldp_sys_name: 'access-sw', lldp_port_id: 'ge-0/0/24', fdb_macs: pcs.map((p) => p[2]) }), port(2, { fdb_macs: ['00:80:77:00:00:12'] }),
    ], { chassis_id: '00:1B:21:00:00:01' }));
    await postHost(d, report('access-sw', '10.1.0.2', '00:1B:21:00:00:02', [
      port(24, { lldp_chassis_id: '00:1B:21:00:00:01', lldp_port_id: 'ge-0/0/1' }), ...pcs.map((p, k) => port(k + 1, { fdb_macs: [p[2]] })),
    ]));
    await postHost(d, report('printer', '10.1.0.12', '00:80:77:00:00:12'));
    for (const [name, ip, mac] of pcs) await postHost(d, report(name, ip, mac));

    const w = await openPage(world.browser, world.app.url, [], { width: 1440, height: 900 });
    await signIn(w.page, world.app.url, world.user, '/');
    await waitForMap(w.page);
    await w.page.selectOption('#view', 'l2');
    const edges = async () => Object.entries(await mapSnapshot(w.page)).filter(([id]) => id.startsWith('physical_link:')).map(([, e]) => e.classes);
    await waitFor('the l2 view drawn', async () => (await edges()).length === 14 && !/Laying out/.test((await w.page.textContent('.status')) ?? ''));
    const all = await edges();
    expect(all.filter((c) => c.includes('forwarding_table'))).to.have.length(13); // 12 pcs and the printer
    const legend = await w.page.$$eval('#map-legend li', (els) => els.map((e) => `${e.getAttribute('data-legend')}|${e.textContent!.trim()}`));
    expect(legend).to.include.members(['physical_link|Physical link (LLDP/CDP)', 'physical_link.forwarding_table|On this port (switch forwarding table)']);
    if (process.env.SCREENSHOTS) await w.page.screenshot({ path: 'docs/web-l2-snmp.png' });
    expectNoProblems(w);
    await w.page.close();
  });
});
