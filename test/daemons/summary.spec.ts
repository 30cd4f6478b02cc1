// A first run that explains itself, through HTTP as a daemon (the Scanopy 0.14 protocol) and as its
// Admin: an ended Network session's summary (GET /api/v1/daemons/:id/sessions: hosts found, new,
// changed, unchanged, gone, services found, the new and gone hosts named), and a daemon_poll daemon
// that stopped polling shown as not running (is_stale).
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { sessionSummaryResponse } from '../../src/modules/daemons/schemas.js';
import { DAEMON_POLL_STALE_AFTER_MS } from '../../src/modules/daemons/view.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { hostReport, postHost, postSubnet, type ReportOptions } from '../discovery/reports.js';
import { seedDaemon } from '../workers/support.js';
import { createDaemonKey, daemonClient, registerDaemon, sql, type DaemonClient } from './world.js';

const STATUS = { name: 'scanopy-daemon', mode: 'daemon_poll', version: '0.14.13' };

describe('daemons: a run that explains itself (session summary, stale daemons)', () => {
  let app: TestApp;
  let t: Tenant;
  let d: DaemonClient;
  let lan: any;
  let dmz: any;

  const sessions = async () => expectOk(await call(app.url, 'GET', `/api/v1/daemons/${d.id}/sessions`, { auth: t.owner })) as any[];
  const summaryOf = async (id: string) => (await sessions()).find((s) => s.id === id)!.summary;
  const requestWork = async () => expectOk(await d.post(`/api/daemons/${d.id}/request-work`, STATUS)) as [any, boolean];
  const end = async (work: any, phase: 'Complete' | 'Failed', extra: Record<string, unknown> = {}) =>
    expectOk(await d.post(`/api/v1/discovery/${work.session_id}/update`, { ...work, phase, progress: 100, finished_at: new Date().toISOString(), ...extra }));
  const scanNow = async () => expectOk(await call(app.url, 'POST', `/api/v1/daemons/${d.id}/sessions`, { auth: t.owner }), 201);

  /** A host as a Scanopy daemon reports it in a Network run (a fixed id, so runs name the same machine). */
  const hosts: Record<string, string> = {};
  const report = (name: string, ip: string, o: ReportOptions = {}) => {
    hosts[name] ??= randomUUID();
    return hostReport(d, t.defaultNetworkId, {
      hostId: hosts[name], name, hostname: `${name}.lab`, interfaces: [{ subnet_id: ip.startsWith('198.18.2.') ? dmz.id : lan.id, ip_address: ip }],
      ports: [{ number: 22 }], services: [{ name: 'SSH', ports: [22] }], ...o,
    });
  };
  /** The metadata of a run as a Scanopy daemon dates it: a new date every run. */
  const dated = (date: string) => [{ type: 'Network', subnet_ids: null, host_naming_fallback: 'BestService', daemon_id: d.id, date }];

  beforeEach(async () => {
    app = await startTestApp();
    t = await registerTenant(app.url, 'summary');
    d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, t.defaultNetworkId)).key);
    await registerDaemon(d, t.defaultNetworkId);
    lan = await postSubnet(d, t.defaultNetworkId, '198.18.1.0/24');
    dmz = await postSubnet(d, t.defaultNetworkId, '198.18.2.0/24');
    const [selfReport] = await requestWork();
    await end(selfReport, 'Complete');
    // Only the LAN is approved: the runs scan it (the DMZ host below is reported, but outside it).
    expectOk(await call(app.url, 'POST', `/api/v1/daemons/${d.id}/targets`, { auth: t.owner, body: { subnet_id: lan.id } }));
  });
  afterEach(() => app.close());

  it('two runs: the second counts new, changed, unchanged and gone hosts and names the new and gone ones; a host gone once is not gone again', async () => {
    // Run 1: five hosts, all new (one of them on the DMZ, which the run did not scan).
    const [run1] = await requestWork();
    expect(run1.discovery_type.subnet_ids).to.deep.equal([lan.id]);
    for (const [name, ip] of [['alpha', '198.18.1.10'], ['bravo', '198.18.1.11'], ['charlie', '198.18.1.12'], ['foxtrot', '198.18.1.15'], ['echo', '198.18.2.14']]) {
      await postHost(d, report(name!, ip!, name === 'foxtrot' ? { metadata: dated('2026-11-27T10:00:00Z') } : {}));
    }
    await end(run1, 'Complete');
    const first = await summaryOf(run1.session_id);
    expect(first).to.deep.include({
      hosts_found: 5, hosts_new: 5, hosts_changed: 0, hosts_unchanged: 0, hosts_gone: 0, services_found: 5,
      scanned_subnet_ids: [lan.id], compared_with_session_id: null, gone_hosts: [],
    });
    expect(first.new_hosts.map((h: any) => h.name)).to.deep.equal(['alpha', 'bravo', 'charlie', 'echo', 'foxtrot']);
    expect(first.new_hosts[0]).to.deep.equal({ id: hosts.alpha, name: 'alpha' });
    expect(sessionSummaryResponse.validate(first, { presence: 'required' }).error).to.equal(undefined);

    // Run 2: alpha as it was (the digest answers it: nothing written); foxtrot re-dated as a Scanopy
    // daemon dates every run (its source metadata and its service's change, nothing else); bravo
    // with a new port; delta new; charlie not found (gone); echo not found either, but the run did
    // not scan the DMZ (not gone).
    const queued = await scanNow();
    const [run2] = await requestWork();
    expect(run2.session_id).to.equal(queued.id);
    await postHost(d, report('alpha', '198.18.1.10'));
    await postHost(d, report('foxtrot', '198.18.1.15', { metadata: dated('2026-11-28T10:00:00Z') }));
    await postHost(d, report('bravo', '198.18.1.11', { ports: [{ number: 22 }, { number: 80 }] }));
    await postHost(d, report('delta', '198.18.1.13'));
    await end(run2, 'Complete');
    const second = await summaryOf(run2.session_id);
    expect(second).to.deep.include({
      hosts_found: 4, hosts_new: 1, hosts_changed: 1, hosts_unchanged: 2, hosts_gone: 1, services_found: 4,
      new_hosts: [{ id: hosts.delta, name: 'delta' }], gone_hosts: [{ id: hosts.charlie, name: 'charlie' }],
      scanned_subnet_ids: [lan.id], compared_with_session_id: run1.session_id,
    });
    // The first run's summary is kept as it was at its end.
    expect(await summaryOf(run1.session_id)).to.deep.equal(first);

    // Run 3 finds the same four: charlie was gone last time, not again; nothing changed.
    await scanNow();
    const [run3] = await requestWork();
    for (const [name, ip] of [['alpha', '198.18.1.10'], ['bravo', '198.18.1.11'], ['delta', '198.18.1.13']]) {
      await postHost(d, report(name!, ip!, name === 'bravo' ? { ports: [{ number: 22 }, { number: 80 }] } : {}));
    }
    await postHost(d, report('foxtrot', '198.18.1.15', { metadata: dated('2026-11-29T10:00:00Z') }));
    await end(run3, 'Complete');
    expect(await summaryOf(run3.session_id)).to.deep.include({
      hosts_found: 4, hosts_new: 0, hosts_changed: 0, hosts_unchanged: 4, hosts_gone: 0, new_hosts: [], gone_hosts: [], compared_with_session_id: run2.session_id,
    });
  });

  it('a run that fails counts what it found but no gone host (null): a partial run says nothing of what it missed', async () => {
    const [run1] = await requestWork();
    await postHost(d, report('alpha', '198.18.1.10'));
    await postHost(d, report('bravo', '198.18.1.11'));
    await end(run1, 'Complete');
    await scanNow();
    const [run2] = await requestWork();
    await postHost(d, report('alpha', '198.18.1.10'));
    await end(run2, 'Failed', { error: 'the agent stopped' });
    expect(await summaryOf(run2.session_id)).to.deep.include({ hosts_found: 1, hosts_new: 0, hosts_unchanged: 1, hosts_gone: null, gone_hosts: [] });
    // The next complete run compares with the last complete one (run 1) and any since: bravo is gone.
    await scanNow();
    const [run3] = await requestWork();
    await postHost(d, report('alpha', '198.18.1.10'));
    await end(run3, 'Complete');
    expect(await summaryOf(run3.session_id)).to.deep.include({ hosts_gone: 1, gone_hosts: [{ id: hosts.bravo, name: 'bravo' }], compared_with_session_id: run1.session_id });
  });

  it('a session the daemon creates itself (an agent run with --once) names no subnet: the subnets of the hosts it found are the scanned ones; other sessions get no summary', async () => {
    const [queued] = await requestWork(); // the Network session the approval queued
    await postHost(d, report('alpha', '198.18.1.10'));
    await end(queued, 'Complete');
    const listed = await sessions();
    expect(listed.find((s) => s.discovery_type.type === 'SelfReport').summary).to.equal(null);
    expect(listed.find((s) => s.id === queued.session_id).summary).to.deep.include({ hosts_found: 1, hosts_new: 1, scanned_subnet_ids: [lan.id] });

    // Our agent's --once run: the session is created from its first update, with subnet_ids null.
    const sessionId = randomUUID();
    const once = {
      session_id: sessionId, daemon_id: d.id, network_id: t.defaultNetworkId, phase: 'Scanning', progress: 10, error: null,
      discovery_type: { type: 'Network', subnet_ids: null, host_naming_fallback: 'BestService' }, started_at: new Date().toISOString(), finished_at: null,
    };
    expectOk(await d.post(`/api/v1/discovery/${sessionId}/update`, once));
    await postHost(d, report('golf', '198.18.1.20'));
    expectOk(await d.post(`/api/v1/discovery/${sessionId}/update`, { ...once, phase: 'Complete', progress: 100, finished_at: new Date().toISOString() }));
    // It found golf on the LAN: the LAN is what it scanned, and alpha, found there by the run before, is gone.
    expect(await summaryOf(sessionId)).to.deep.include({
      hosts_found: 1, hosts_new: 1, new_hosts: [{ id: hosts.golf, name: 'golf' }], scanned_subnet_ids: [lan.id],
      hosts_gone: 1, gone_hosts: [{ id: hosts.alpha, name: 'alpha' }], compared_with_session_id: queued.session_id,
    });
  });

  it(`a daemon_poll daemon not heard from for ${DAEMON_POLL_STALE_AFTER_MS / 1000} s is stale (not running); a session update is contact; server_poll never is`, async () => {
    const get = async (id = d.id) => expectOk(await call(app.url, 'GET', `/api/v1/daemons/${id}`, { auth: t.owner }));
    expect(await get()).to.include({ mode: 'daemon_poll', is_stale: false });
    const age = (ms: number, id = d.id) => sql(app, `update daemons set last_seen = now() - make_interval(secs => ?) where id = ?`, [ms / 1000, id]);
    await age(DAEMON_POLL_STALE_AFTER_MS - 10_000);
    expect((await get()).is_stale).to.equal(false);
    await age(DAEMON_POLL_STALE_AFTER_MS + 10_000); // an agent that ran --once and exited
    const stale = await get();
    expect(stale.is_stale).to.equal(true);
    expect(Date.now() - Date.parse(stale.last_seen)).to.be.greaterThan(DAEMON_POLL_STALE_AFTER_MS);
    const listed = expectOk(await call(app.url, 'GET', '/api/v1/daemons', { auth: t.owner })) as any[];
    expect(listed.find((x) => x.id === d.id).is_stale).to.equal(true);

    // A --once run polls for no work: its session updates are what say it is there.
    const sessionId = randomUUID();
    expectOk(await d.post(`/api/v1/discovery/${sessionId}/update`, {
      session_id: sessionId, daemon_id: d.id, network_id: t.defaultNetworkId, phase: 'Scanning', progress: 10, error: null,
      discovery_type: { type: 'Network', subnet_ids: null }, started_at: new Date().toISOString(), finished_at: null,
    }));
    expect((await get()).is_stale).to.equal(false);

    // A server_poll daemon long unseen is not "stale": the server polls it (is_unreachable says whether it answers).
    const seeded = await seedDaemon(app, { orgId: t.orgId, networkId: t.defaultNetworkId, url: 'http://127.0.0.1:9' });
    await age(DAEMON_POLL_STALE_AFTER_MS * 10, seeded.id);
    expect(await get(seeded.id)).to.include({ mode: 'server_poll', is_stale: false });
  });
});
