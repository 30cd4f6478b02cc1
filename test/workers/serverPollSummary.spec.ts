// A server_poll daemon's run summary counts the hosts that came with the poll that ended the run:
// the poller ingests a poll's entities before it applies the poll's terminal progress, so those
// hosts are the session's (found by it) when the summary is computed.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { Worker } from 'bullmq';
import { pollDaemon } from '../../src/modules/serverPoll/poller.js';
import { startDiscoverySync } from '../../workers/discoverySync.js';
import { hostReport } from '../discovery/reports.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { envelope, seedDaemon, seedSession, startStandInDaemon, workerServicesFor, type StandInDaemon } from './support.js';

const STATUS = { name: 'scanopy-daemon-serverpoll', mode: 'server_poll', version: '0.14.10', capabilities: { has_docker_socket: false, interfaced_subnet_ids: [] } };

describe('server-poll worker: the summary of a run that ends in the poll that brings its last hosts', function () {
  this.timeout(60_000);
  let app: TestApp;
  let t: Tenant;
  let services: ReturnType<typeof workerServicesFor>;
  let daemon: StandInDaemon | undefined;
  let sync: Worker | undefined;

  beforeEach(async () => {
    app = await startTestApp({ daemonAllowedNetworks: ['127.0.0.0/8'] });
    t = await registerTenant(app.url);
    services = workerServicesFor(app, { serverPollTimeoutMs: 1000, serverPollAckWaitMs: 15_000 });
    sync = await startDiscoverySync(services);
  });
  afterEach(async () => {
    await sync?.close();
    await daemon?.close();
    await services.close();
    await app.close();
  });

  it('hosts found, new and services come from that last poll', async () => {
    const subnet = expectOk(await call(app.url, 'POST', '/api/v1/subnets', {
      auth: t.owner, body: { network_id: t.defaultNetworkId, cidr: '198.18.5.0/24', name: 'lab', subnet_type: 'Lan', source: { type: 'Manual' } },
    }), 201);
    let d: { id: string } = { id: randomUUID() };
    const discoveryType = { type: 'Network', subnet_ids: [subnet.id], host_naming_fallback: 'BestService' };
    const sessionId = randomUUID();
    const now = new Date().toISOString();
    const reports = ['198.18.5.10', '198.18.5.11'].map((ip, k) => hostReport(d as never, t.defaultNetworkId, {
      name: `h${k}`, interfaces: [{ subnet_id: subnet.id, ip_address: ip }], ports: [{ number: 22 }], services: [{ name: 'SSH', ports: [22] }],
    }));
    daemon = await startStandInDaemon((req) => {
      if (req.path === '/api/status') return { status: 200, body: envelope(STATUS) };
      if (req.path === '/api/poll') {
        return {
          status: 200,
          body: envelope({
            progress: { session_id: sessionId, daemon_id: d.id, network_id: t.defaultNetworkId, phase: 'Complete', discovery_type: discoveryType, progress: 100, error: null, started_at: now, finished_at: now },
            entities: { hosts: reports, subnets: [] },
          }),
        };
      }
      if (req.path === '/api/discovery/entities-created') return { status: 200, body: envelope('Created entities acknowledged') };
      return undefined;
    });
    d = await seedDaemon(app, { id: d.id, orgId: t.orgId, networkId: t.defaultNetworkId, url: daemon.url, version: '0.14.10', lastSeen: new Date() });
    await seedSession(app, { id: sessionId, orgId: t.orgId, networkId: t.defaultNetworkId, daemonId: d.id, discoveryType: JSON.stringify(discoveryType), phase: 'Scanning' });

    expect(await pollDaemon(services, d.id)).to.include({ result: 'ok', entitiesConfirmed: 2 });
    const sessions = expectOk(await call(app.url, 'GET', `/api/v1/daemons/${d.id}/sessions`, { auth: t.owner })) as any[];
    const run = sessions.find((s) => s.id === sessionId);
    expect(run.phase).to.equal('Complete');
    expect(run.summary).to.include({ hosts_found: 2, hosts_new: 2, hosts_gone: 0, services_found: 2 });
    expect(run.summary.new_hosts.map((h: { name: string }) => h.name).sort()).to.deep.equal(['h0', 'h1']);
  });
});
