// Ingestion content an audit found no test for (issue 22; the replay tests check status and
// shape): each recorded daemon's self-report binds its port on its address (a Port binding with
// `interface_id`), and the stored binding must keep that address.
import { expect } from 'chai';
import { existsSync, readdirSync } from 'node:fs';
import { startTestApp, type TestApp } from '../support/app.js';
import { SCANOPY_FIXTURES_DIR, readRecording } from '../support/fixtures.js';
import { call, expectOk } from '../support/client.js';
import { createNetwork, registerTenant } from '../support/world.js';
import { createDaemonKey, daemonClient, registerDaemon } from '../daemons/world.js';
import { postHost, postSubnet } from './reports.js';

/** Versions whose recording parses (v0.13.3's holds conflict markers: replay.spec.ts handles it). */
const versions = readdirSync(SCANOPY_FIXTURES_DIR).filter((d) => /^v\d+\.\d+\.\d+$/.test(d) && existsSync(`${SCANOPY_FIXTURES_DIR}/${d}/daemon_to_server.json`)).filter((d) => {
  try {
    readRecording(d, 'daemon_to_server.json');
    return true;
  } catch {
    return false;
  }
});

/** `key` replaced by `value` in every object at any depth. */
const replaceKey = (v: unknown, key: string, value: unknown): unknown => (Array.isArray(v)
  ? v.map((x) => replaceKey(x, key, value))
  : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, k === key ? value : replaceKey(x, key, value)])) : v);

describe('discovery: what the audit slipped past', function () {
  this.timeout(60_000);
  let app: TestApp;
  beforeEach(async () => { app = await startTestApp(); });
  afterEach(() => app.close());

  it('a reported Port binding on an address keeps that address (every recorded daemon version\'s self-report)', async () => {
    expect(versions.length).to.be.greaterThan(10);
    const t = await registerTenant(app.url, 'discovery');
    for (const version of versions) {
      const exchanges = readRecording(version, 'daemon_to_server.json').exchanges;
      const subnet = exchanges.find((x: any) => x.method === 'POST' && x.path === '/api/v1/subnets').request_body;
      const report = exchanges.find((x: any) => x.path === '/api/v1/hosts/discovery').request_body;
      const reported = report.services.flatMap((s: any) => s.bindings).find((b: any) => b.type === 'Port' && b.interface_id);
      const reportedIp = report.interfaces.find((i: any) => i.id === reported.interface_id).ip_address;
      const reportedPort = report.ports.find((p: any) => p.id === reported.port_id).number;

      // A network per version: the recordings share ids, which another network's rows then hold.
      const net = await createNetwork(app.url, t.owner, version);
      const d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, net)).key);
      await registerDaemon(d, net);
      const stored = await postSubnet(d, net, subnet.cidr);
      let body = replaceKey(report, 'network_id', net);
      body = replaceKey(body, 'daemon_id', d.id);
      body = replaceKey(body, 'subnet_id', stored.id);
      const answer = await postHost(d, body);

      const answeredIp = answer.interfaces.find((i: any) => i.ip_address === reportedIp);
      const answeredBinding = answer.services.flatMap((s: any) => s.bindings).find((b: any) => b.type === 'Port');
      expect(answeredBinding.interface_id, `${version}: the answer's binding`).to.equal(answeredIp.id);
      const host = expectOk(await call(app.url, 'GET', `/api/v1/hosts/${answer.id}`, { auth: t.owner }));
      const ip = host.ip_addresses.find((i: any) => i.ip_address === reportedIp);
      const binding = host.services.flatMap((s: any) => s.bindings).find((b: any) => b.type === 'Port');
      expect(binding, version).to.include({ port_id: host.ports.find((p: any) => p.number === reportedPort).id, ip_address_id: ip.id });
    }
  });
});
