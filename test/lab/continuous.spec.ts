// Continuous discovery in the lab (issue 39): the real agent in a lab namespace, a schedule of one
// "minute" per daemon (a daemon_poll agent and a server_poll one), and nothing clicked after the
// schedule is made. On a segment of four hosts (198.18.32.0/24, test/lab/miniLab.ts):
//  - the schedule's runs scan with no click;
//  - a stopped service (web's 8080) and a host taken off the segment (iot) are, after the next scan,
//    a removed port/service and an offline host, and one digest of each scan's changes reaches the
//    webhook receiver (signed) and the SMTP server (STARTTLS, AUTH);
//  - the unchanged host (db) gets no history state and no event from the rescans;
//  - iot put back gives "back online";
//  - an ignored host (phone) taken down gives nothing.
// The schedules' "minute" is DISCOVERY_SCHEDULE_MINUTE_MS (test-only) long. Root only: otherwise
// pending, with the reason.
//
// NETWORK SAFETY: the agent's namespace has no default route, only the lab /24 and the /30 to the
// server (miniLab's assertIsolated() before every spawn there); its nftables output chain drops
// anything else. Webhooks and mail go to receivers on 127.0.0.1.
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Worker } from 'bullmq';
import { expect } from 'chai';
import { startAlertDelivery } from '../../workers/alertDelivery.js';
import { startDiscoverySchedule } from '../../workers/discoverySchedule.js';
import { startDiscoverySync } from '../../workers/discoverySync.js';
import { startServerPoll } from '../../workers/serverPoll.js';
import { startWebhookDelivery } from '../../workers/webhookDelivery.js';
import { createDaemonKey, sql } from '../daemons/world.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { createNetwork, registerTenant, type Tenant } from '../support/world.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';
import { smtpConfig, startSmtpServer, type SmtpServer } from '../alerts/world.js';
import { db, waitFor, workerServicesFor } from '../workers/support.js';
import { sequenceEvents } from '../../src/modules/events/service.js';
import { LAB_PACKAGES, ensurePackages } from './packages.js';
import { labUnavailable, NODE, ROOT } from './lab.js';
import { createMiniLab, type MiniLab } from './miniLab.js';

const AGENT_MAIN = path.join(ROOT, 'agent/main.ts');
const SUBNET = '198.18.32.0/24';
const AGENT_LAB_IP = '198.18.32.2';
const MINUTE_MS = 6000;
const SCAN_LIMIT_MS = 90_000;
const HOSTS = { web: '198.18.32.10', db: '198.18.32.11', iot: '198.18.32.12', phone: '198.18.32.13' } as const;
type HostName = keyof typeof HOSTS;

/** HTTP servers on the host's ports; a port whose stop file appears stops answering (its service stopped). */
const HTTP_SCRIPT = `
const fs = require('node:fs');
const http = require('node:http');
const { ip, ports, stopDir } = JSON.parse(process.argv[1]);
for (const port of ports) {
  const sockets = new Set();
  const server = http.createServer((req, res) => { res.writeHead(200, { 'Content-Type': 'text/html', Server: 'lab-httpd' }); res.end('<title>lab ' + port + '</title>'); });
  server.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
  server.listen(port, ip);
  const timer = setInterval(() => {
    if (!fs.existsSync(stopDir + '/' + ip + '-' + port)) return;
    clearInterval(timer);
    server.close();
    for (const s of sockets) s.destroy();
  }, 200);
}
`;

interface Mode {
  name: 'daemon_poll' | 'server_poll';
  networkId: string;
  daemonId: string;
  hostIds: Partial<Record<HostName, string>>;
}

describe('continuous discovery in the lab: schedules, offline, alerts, no noise', function () {
  this.timeout(SCAN_LIMIT_MS * 3);
  let lab: MiniLab;
  let app: TestApp;
  let api: { url: string; close(): Promise<void> };
  let t: Tenant;
  let receiver: Receiver;
  let smtp: SmtpServer;
  let stopDir: string;
  const agents: Array<{ child: ChildProcess; output: () => string }> = [];
  const workers: Worker[] = [];
  const closers: Array<() => Promise<unknown>> = [];
  const modes: Mode[] = [];

  const agentOutput = () => agents.map((a) => a.output().slice(-1500)).join('\n----\n');
  const sessionsOf = async (m: Mode) => expectOk(await call(app.url, 'GET', `/api/v1/daemons/${m.daemonId}/sessions`, { auth: t.owner })) as Array<{ id: string; phase: string; discovery_type: { type: string }; created_at: string; summary: any }>;
  /** The first Network session of the daemon created after `after` that completed (its summary written). */
  const completedAfter = (m: Mode, after: number, what: string) => waitFor(`${m.name}: ${what}`, async () => {
    const done = (await sessionsOf(m)).filter((s) => s.discovery_type.type === 'Network' && s.phase === 'Complete' && Date.parse(s.created_at) > after && s.summary);
    return done.at(-1);
  }, SCAN_LIMIT_MS, 500).catch((err: Error) => { throw new Error(`${err.message}\nagents:\n${agentOutput()}`); });
  const hostsOf = async (m: Mode) => expectOk(await call(app.url, 'GET', `/api/v1/hosts?network_id=${m.networkId}&limit=100`, { auth: t.owner })) as any[];
  const byIp = (hosts: any[], ip: string) => hosts.find((h) => (h.ip_addresses ?? []).some((a: any) => a.ip_address === ip));
  let queues: ReturnType<typeof workerServicesFor>['queues'];
  /** What a server_poll daemon reported is ingested by discovery-sync jobs after its session ends: wait for them. */
  const drained = () => waitFor('discovery-sync drained', async () => {
    const counts = await queues.discoverySync.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
    return Object.values(counts).every((n) => n === 0);
  }, 30_000, 200);
  const digests = (m: Mode) => receiver.received.filter((r) => r.json?.type === 'alert.digest' && r.json.data?.network_id === m.networkId);

  before(async function () {
    this.timeout(300_000);
    const why = labUnavailable();
    if (why) {
      console.log(`      pending: ${why}`);
      this.skip();
    }
    ensurePackages(LAB_PACKAGES.filter((n) => n.pkg === 'iproute2' || n.pkg === 'nftables'));
    stopDir = fs.mkdtempSync(path.join(os.tmpdir(), 'netinv-continuous-'));
    const host = (name: HostName, mac: string, ports: number[]) => ({ name, ip: HOSTS[name], mac, script: HTTP_SCRIPT, arg: { ip: HOSTS[name], ports, stopDir }, ports });
    lab = createMiniLab({
      tag: 'cd', subnet: SUBNET, agentIp: AGENT_LAB_IP,
      hosts: [host('web', '3c:7c:3f:32:00:10', [80, 8080]), host('db', '3c:7c:3f:32:00:11', [80]), host('iot', 'b8:27:eb:32:00:12', [80]), host('phone', 'f0:18:98:32:00:13', [80])],
    });
    lab.assertAgentIsolated();
    app = await startTestApp({ daemonAllowedNetworks: [`${lab.agentServerIp}/32`], webhookAllowedNetworks: ['127.0.0.0/8'] });
    api = await lab.forward(Number(new URL(app.url).port));
    t = await registerTenant(app.url, 'continuous');
    receiver = await startReceiver();
    smtp = await startSmtpServer();

    // The worker processes' queues, in this process: schedules (a short "minute"), server polls, discovery-sync, webhooks, alert mail.
    const services = workerServicesFor(app, { scheduleMinuteMs: MINUTE_MS, serverPollIntervalMs: 1000, serverPollTimeoutMs: 5000, serverPollAckWaitMs: 10_000 });
    services.config = { ...smtpConfig(smtp, app), daemonAllowedNetworks: [`${lab.agentServerIp}/32`], webhookAllowedNetworks: ['127.0.0.0/8'], webhookRetrySchedule: [0, 1, 1] };
    closers.push(() => services.close());
    queues = services.queues;
    workers.push(await startDiscoverySchedule(services), await startServerPoll(services), await startDiscoverySync(services),
      await startWebhookDelivery(services, { sweepMs: 200 }), await startAlertDelivery(services, { sweepMs: 300 }));

    // daemon_poll: an agent asking for work every half second, no --targets of its own.
    const pollNetwork = await createNetwork(app.url, t.owner, 'continuous daemon_poll');
    const { key } = await createDaemonKey(app.url, t.owner, pollNetwork);
    agents.push(lab.spawnInAgentNs(NODE, ['--import', 'tsx', AGENT_MAIN, '--server', api.url, '--network', pollNetwork,
      '--state', path.join(lab.dir, 'state-poll.json'), '--name', 'continuous-poll', '--interval', '0.5', '--full-range-runs', '0'], { AGENT_KEY: key }));
    const pollDaemon = await waitFor('the daemon_poll agent registered', async () =>
      (expectOk(await call(app.url, 'GET', `/api/v1/daemons?network_id=${pollNetwork}`, { auth: t.owner })) as Array<{ id: string }>)[0]?.id, 30_000, 200);
    modes.push({ name: 'daemon_poll', networkId: pollNetwork, daemonId: pollDaemon, hostIds: {} });

    // server_poll: provisioned; the poll worker calls it at its end of the /30.
    const polledNetwork = await createNetwork(app.url, t.owner, 'continuous server_poll');
    const listen = 60074;
    const provisioned = expectOk(await call(app.url, 'POST', '/api/v1/daemons/provision', {
      auth: t.owner, body: { name: 'continuous-server-poll', network_id: polledNetwork, url: `http://${lab.agentServerIp}:${listen}` },
    }), 201);
    agents.push(lab.spawnInAgentNs(NODE, ['--import', 'tsx', AGENT_MAIN, '--mode', 'server_poll', '--listen', `${lab.agentServerIp}:${listen}`,
      '--server', api.url, '--network', polledNetwork, '--state', path.join(lab.dir, 'state-server-poll.json'), '--full-range-runs', '0'], { AGENT_KEY: provisioned.daemon_api_key }));
    modes.push({ name: 'server_poll', networkId: polledNetwork, daemonId: provisioned.daemon.id, hostIds: {} });

    // Each: the lab subnet approved (its first scan), then the alerts, then a schedule: nothing more is clicked.
    const endpoint = expectOk(await call(app.url, 'POST', '/api/v1/webhooks', { auth: t.owner, body: { name: 'alerts', url: receiver.url, event_types: ['alert.digest'] } }), 201);
    receiver.secrets.push(endpoint.secret);
    await Promise.all(modes.map(async (m) => {
      const started = Date.now();
      const subnet = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { auth: t.owner, body: { network_id: m.networkId, cidr: SUBNET, name: 'lab' } }), 201);
      expectOk(await call(app.url, 'POST', `/api/v1/daemons/${m.daemonId}/targets`, { auth: t.owner, body: { subnet_id: subnet.id, snmp_public: false } }));
      await completedAfter(m, started - 1000, 'the first scan');
      await drained();
      const hosts = await hostsOf(m);
      for (const name of Object.keys(HOSTS) as HostName[]) m.hostIds[name] = byIp(hosts, HOSTS[name])?.id;
      expect(Object.values(m.hostIds).filter(Boolean), `${m.name}: every lab host found`).to.have.length(4);
      for (const kind of ['host_offline', 'host_online', 'port_removed', 'service_removed', 'host_new']) {
        expectOk(await call(app.url, 'POST', '/api/v1/alert_rules', { auth: t.owner, body: { network_id: m.networkId, kind, webhook_ids: [endpoint.id], email_to: ['noc@example.test'] } }), 201);
      }
      expectOk(await call(app.url, 'PATCH', `/api/v1/hosts/${m.hostIds.phone}`, { auth: t.owner, body: { ignored: true } }));
    }));
  });

  after(async () => {
    for (const a of agents) a.child.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.close()));
    for (const close of closers) await close();
    await receiver?.close();
    await smtp?.close();
    await api?.close();
    await app?.close();
    lab?.destroy();
    if (stopDir) fs.rmSync(stopDir, { recursive: true, force: true });
  });

  /** History states of the host and its children, and the events about them (sequenced first, as the event hub does). */
  const counts = async (hostId: string) => {
    await sequenceEvents(db(app));
    return (await sql(app, `
    select (select count(*)::int from hosts_history where id = ?) + (select count(*)::int from ip_addresses_history where host_id = ?)
         + (select count(*)::int from ports_history where host_id = ?) + (select count(*)::int from services_history where host_id = ?) as states,
           (select count(*)::int from events where entity_id = ? or data->>'host_id' = ?) as events`, [hostId, hostId, hostId, hostId, hostId, hostId]))[0]!;
  };

  it('scheduled scans run with no click, see the changes, and alert once per scan; the unchanged host writes nothing; an ignored host gives nothing', async function () {
    this.timeout(SCAN_LIMIT_MS * 4);
    await drained();
    const before = Object.fromEntries(await Promise.all(modes.map(async (m) => [m.name, await counts(m.hostIds.db!)] as const)));
    const scheduled = Date.now();
    for (const m of modes) {
      const made = expectOk(await call(app.url, 'POST', `/api/v1/daemons/${m.daemonId}/schedules`, { auth: t.owner, body: { every_minutes: 1 } }), 201);
      expect(made.enabled).to.equal(true);
    }
    // A scheduled scan of the unchanged lab: no click made it.
    await Promise.all(modes.map((m) => completedAfter(m, scheduled, 'a scheduled scan')));

    // A service stops, a host goes away, the ignored host too.
    fs.writeFileSync(path.join(stopDir, `${HOSTS.web}-8080`), '');
    lab.setLink('iot', false);
    lab.setLink('phone', false);
    await Promise.all(modes.map((m) => waitFor(`${m.name}: iot offline`, async () => (await hostsOf(m)).find((h) => h.id === m.hostIds.iot)?.status === 'offline', SCAN_LIMIT_MS, 500)
      .catch((err: Error) => { throw new Error(`${err.message}\nagents:\n${agentOutput()}`); })));
    for (const m of modes) {
      const hosts = await hostsOf(m);
      const web = hosts.find((h) => h.id === m.hostIds.web)!;
      expect(web.status).to.equal('online');
      const port8080 = web.ports.find((p: any) => p.number === 8080)?.id;
      const on8080 = web.services.filter((sv: any) => (sv.bindings ?? []).some((b: any) => b.port_id === port8080));
      expect(on8080, `${m.name}: web's stopped service: ${JSON.stringify(web.services)}`).to.deep.equal([]);
      expect(web.ports.find((p: any) => p.number === 8080)?.offline_at, `${m.name}: port 8080 closed, kept offline`).to.be.a('string');
      expect(web.services.filter((sv: any) => sv.offline_at !== null), `${m.name}: the stopped service kept, offline`).to.have.length(1);
      expect(hosts.find((h) => h.id === m.hostIds.phone)).to.include({ status: 'ignored', offline_at: null });
      const digest = await waitFor(`${m.name}: a digest with iot offline`, async () => digests(m).find((r) => r.json.data.items.some((i: any) => i.kind === 'host_offline')), 30_000, 200);
      expect(digest.verified).to.equal(true);
      const items = digest.json.data.items as Array<{ kind: string; host_id: string | null; port?: number }>;
      expect(items.filter((i) => i.kind === 'host_offline').map((i) => i.host_id)).to.deep.equal([m.hostIds.iot]);
      // The stopped service: in that digest or the next scan's (a scan running when it stopped may still have seen it).
      await waitFor(`${m.name}: a digest with web's service removed`, async () => digests(m).some((r) => r.json.data.items.some((i: any) => i.kind === 'service_removed' && i.host_id === m.hostIds.web)), SCAN_LIMIT_MS, 200)
        .catch((err: Error) => { throw new Error(`${err.message}: ${JSON.stringify(digests(m).map((r) => r.json.data.items))}`); });
      for (const r of digests(m)) expect(r.json.data.items.map((i: any) => i.host_id), 'nothing of the ignored host').to.not.include(m.hostIds.phone);
      expect(digests(m).filter((r) => r.json.data.items.some((i: any) => i.kind === 'host_offline')), 'one digest for the scan that saw iot gone').to.have.length(1);
    }
    await waitFor('the mails of both networks', async () => smtp.mails.filter((x) => /offline/i.test(x.body)).length >= 2, 30_000, 200);
    const offlineMails = smtp.mails.filter((x) => /offline/i.test(x.body));
    expect(offlineMails.every((x) => x.secure && x.user === 'alerts')).to.equal(true);
    expect(offlineMails.some((x) => x.body.includes(HOSTS.phone))).to.equal(false);

    // The host comes back: "back online".
    lab.setLink('iot', true);
    await Promise.all(modes.map(async (m) => {
      await waitFor(`${m.name}: iot back online`, async () => (await hostsOf(m)).find((h) => h.id === m.hostIds.iot)?.status === 'online', SCAN_LIMIT_MS, 500);
      const back = await waitFor(`${m.name}: a digest saying iot is back`, async () => digests(m).find((r) => r.json.data.items.some((i: any) => i.kind === 'host_online')), 30_000, 200);
      expect(back.json.data.items.filter((i: any) => i.kind === 'host_online').map((i: any) => i.host_id)).to.deep.equal([m.hostIds.iot]);
    }));

    // The unchanged host: several rescans, no state and no event.
    await drained();
    for (const m of modes) {
      const events = await sql(app, `select type, changes from events where entity_id = ? or data->>'host_id' = ? order by id`, [m.hostIds.db, m.hostIds.db]);
      expect(await counts(m.hostIds.db!), `${m.name}: db: ${JSON.stringify(events)}`).to.deep.equal(before[m.name]);
    }
    // The schedule ran by itself: its runs queued sessions.
    for (const m of modes) {
      const [schedule] = expectOk(await call(app.url, 'GET', `/api/v1/daemons/${m.daemonId}/schedules`, { auth: t.owner })) as any[];
      expect(schedule.last_run_at, m.name).to.not.equal(null);
      expect(['queued', 'skipped']).to.include(schedule.last_outcome);
    }
  });
});
