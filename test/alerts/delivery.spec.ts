// Alert digests delivered (issue 39.4): through the signed webhooks (a receiver on 127.0.0.1 checks
// the Standard Webhooks signature with the reference library), a preset shaping the body (Slack's
// {text}, ntfy's JSON publish to the server's root), and by e-mail to a real SMTP server in the test
// (STARTTLS with a self-signed certificate, AUTH PLAIN/LOGIN required): exactly one message per
// digest, however many hosts changed. Quiet hours hold a digest, which goes when they end.
import { randomUUID } from 'node:crypto';
import type { Worker } from 'bullmq';
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectOk } from '../support/client.js';
import { registerTenant, type Tenant } from '../support/world.js';
import { createDaemonKey, daemonClient, registerDaemon, sql, type DaemonClient } from '../daemons/world.js';
import { postSubnet } from '../discovery/reports.js';
import { db, waitFor, workerServicesFor } from '../workers/support.js';
import { startWebhookDelivery } from '../../workers/webhookDelivery.js';
import { startAlertDelivery } from '../../workers/alertDelivery.js';
import { sendDueEmails } from '../../src/modules/alerts/email.js';
import { quietUntil } from '../../src/modules/alerts/quietHours.js';
import { presetRequest } from '../../src/modules/alerts/presets.js';
import { testLogger } from '../support/leakCapture.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';
import { runSession, smtpConfig, startSmtpServer, type HostSpec, type SmtpServer } from './world.js';

describe('alerts: delivered by webhook and e-mail', function () {
  this.timeout(60_000);
  let app: TestApp;
  let t: Tenant;
  let net: string;
  let d: DaemonClient;
  let lan: any;
  let receiver: Receiver;
  let smtp: SmtpServer;
  const stops: Array<() => Promise<unknown>> = [];
  const hosts: HostSpec[] = Array.from({ length: 4 }, (_, k) => ({ id: randomUUID(), ip: `10.39.5.${10 + k}`, mac: `00:16:3E:39:05:${10 + k}`, vendor: 'Xensource' }));
  const run = (list: HostSpec[]) => runSession(d, net, lan.id, list);
  const hook = async (body: Record<string, unknown> = {}) => {
    const created = expectOk(await call(app.url, 'POST', '/api/v1/webhooks', { auth: t.owner, body: { name: 'alerts', url: receiver.url, event_types: ['alert.digest'], ...body } }), 201);
    receiver.secrets.push(created.secret);
    return created;
  };
  const rule = async (body: Record<string, unknown>) => expectOk(await call(app.url, 'POST', '/api/v1/alert_rules', { auth: t.owner, body: { network_id: net, ...body } }), 201);
  const webhookWorker = async () => {
    const ws = workerServicesFor(app);
    const worker: Worker = await startWebhookDelivery({ ...ws, config: { ...ws.config, webhookAllowedNetworks: ['127.0.0.0/8'], webhookRetrySchedule: [0, 1, 1] } }, { sweepMs: 200 });
    stops.push(async () => { await worker.close(); await ws.close(); });
  };
  const mailsSent = () => sendDueEmails(db(app), smtpConfig(smtp, app), testLogger('alert e-mail'));

  beforeEach(async () => {
    app = await startTestApp({ webhookAllowedNetworks: ['127.0.0.0/8'] });
    t = await registerTenant(app.url, 'alert-delivery');
    net = t.defaultNetworkId;
    d = daemonClient(app.url, (await createDaemonKey(app.url, t.owner, net)).key, randomUUID());
    await registerDaemon(d, net);
    lan = await postSubnet(d, net, '10.39.5.0/24');
    receiver = await startReceiver();
    smtp = await startSmtpServer();
    await run(hosts.slice(0, 2)); // the network before any rule
  });
  afterEach(async () => {
    for (const stop of stops.splice(0).reverse()) await stop();
    await receiver.close();
    await smtp.close();
    await app.close();
  });

  it('one digest reaches the webhook receiver (signed) and the SMTP server (STARTTLS, AUTH) once, for a scan that changed several hosts', async () => {
    const endpoint = await hook();
    await rule({ kind: 'host_new', webhook_ids: [endpoint.id], email_to: ['ops@example.test', 'noc@example.test'] });
    await rule({ kind: 'host_offline', webhook_ids: [endpoint.id], email_to: ['ops@example.test', 'noc@example.test'] });
    await webhookWorker();
    await run([hosts[0]!, hosts[2]!, hosts[3]!]); // two new hosts, one offline: three items, one digest

    const [delivery] = await waitFor('the digest at the receiver', async () => (receiver.received.length ? receiver.received : undefined));
    expect(delivery!.verified).to.equal(true);
    expect(delivery!.json.type).to.equal('alert.digest');
    expect(delivery!.json.data.items.map((i: any) => i.kind).sort()).to.deep.equal(['host_new', 'host_new', 'host_offline']);
    expect(delivery!.json.data.lines).to.include('New host: 10.39.5.12');

    expect(await mailsSent()).to.deep.equal({ sent: 1, failed: 0 });
    expect(smtp.mails).to.have.length(1);
    const [mail] = smtp.mails;
    expect(mail!.secure, 'sent after STARTTLS').to.equal(true);
    expect(mail!.user, 'authenticated').to.equal('alerts');
    expect(mail!.to.sort()).to.deep.equal(['noc@example.test', 'ops@example.test']);
    expect(mail!.subject).to.match(/3 changes/);
    expect(mail!.body).to.contain('New host: 10.39.5.12').and.contain('Offline: 10.39.5.11');
    expect(await mailsSent(), 'sent once').to.deep.equal({ sent: 0, failed: 0 });
    await new Promise((r) => setTimeout(r, 600)); // the webhook sweep runs again: still one delivery
    expect(receiver.received).to.have.length(1);
  });

  it('a wrong SMTP password is a failure tried again later, nothing delivered', async () => {
    await rule({ kind: 'host_new', email_to: ['ops@example.test'] });
    await run([hosts[0]!, hosts[1]!, hosts[2]!]);
    expect(await sendDueEmails(db(app), smtpConfig(smtp, app, 'wrong'), testLogger('alert e-mail'))).to.deep.equal({ sent: 0, failed: 1 });
    expect(smtp.mails).to.have.length(0);
    expect(smtp.refusedAuth).to.be.greaterThan(0);
    const [row] = await sql(app, `select status, attempts, last_error, next_attempt_at > now() as later from alert_emails where organization_id = ?`, [t.orgId]);
    expect(row).to.include({ status: 'pending', attempts: 1, later: true });
  });

  it('a preset shapes the body: Slack {text}; ntfy JSON to the server root with the topic', async () => {
    const endpoint = await hook({ preset: 'slack' });
    expect(endpoint.preset).to.equal('slack');
    await rule({ kind: 'host_new', webhook_ids: [endpoint.id] });
    await webhookWorker();
    await run([hosts[0]!, hosts[1]!, hosts[2]!]);
    const [delivery] = await waitFor('the digest at the receiver', async () => (receiver.received.length ? receiver.received : undefined));
    expect(delivery!.verified).to.equal(true); // still signed
    expect(Object.keys(delivery!.json)).to.deep.equal(['text']);
    expect(delivery!.json.text).to.match(/^\*Default: 1 change\*\nNew host: 10\.39\.5\.12$/);

    const payload = { type: 'alert.digest', timestamp: 'now', data: { title: 'Lab: 1 change', lines: ['New host: x'] } };
    const ntfy = presetRequest('ntfy', 'https://ntfy.example.test/netinv-alerts', payload);
    expect(ntfy.url).to.equal('https://ntfy.example.test/');
    expect(JSON.parse(ntfy.body)).to.include({ topic: 'netinv-alerts', title: 'Lab: 1 change', message: 'New host: x' });
    expect(JSON.parse(presetRequest('gotify', 'https://g.example.test/message?token=x', payload).body)).to.deep.equal({ title: 'Lab: 1 change', message: 'New host: x', priority: 5 });
    expect(JSON.parse(presetRequest('discord', 'https://d.example.test/api/webhooks/1/x', payload).body)).to.include({ content: '**Lab: 1 change**\nNew host: x' });
    const teams = JSON.parse(presetRequest('teams', 'https://t.example.test/hook', payload).body);
    expect(teams.attachments[0].contentType).to.equal('application/vnd.microsoft.card.adaptive');
    expect(teams.attachments[0].content.body.map((b: any) => b.text)).to.deep.equal(['Lab: 1 change', 'New host: x']);
    expect(JSON.parse(presetRequest('generic', receiver.url, payload).body)).to.deep.equal(payload);
  });

  it('quiet hours hold the digest (webhook and e-mail) and release it when they end', async () => {
    const endpoint = await hook();
    const now = new Date();
    const hhmm = (d: Date) => d.toISOString().slice(11, 16);
    const quiet = { start: hhmm(new Date(now.getTime() - 3600_000)), end: hhmm(new Date(now.getTime() + 3600_000)), timezone: 'UTC' };
    await rule({ kind: 'host_new', webhook_ids: [endpoint.id], email_to: ['ops@example.test'], quiet_hours: quiet });
    await webhookWorker();
    await run([hosts[0]!, hosts[1]!, hosts[2]!]);
    const [alert] = expectOk(await call(app.url, 'GET', `/api/v1/alerts?network_id=${net}`, { auth: t.owner }));
    expect(Date.parse(alert.held_until) - now.getTime()).to.be.within(3540_000, 3600_000); // the end of the window
    expect(await mailsSent()).to.deep.equal({ sent: 0, failed: 0 });
    await new Promise((r) => setTimeout(r, 1500)); // several webhook sweeps
    expect(receiver.received).to.have.length(0);

    // The quiet hours end (as time would): both go.
    await sql(app, `update webhook_deliveries set next_attempt_at = now() - interval '3 seconds' where organization_id = ? and type = 'alert.digest'`, [t.orgId]);
    await sql(app, `update alert_emails set next_attempt_at = now() - interval '1 second' where organization_id = ?`, [t.orgId]);
    await waitFor('the held digest at the receiver', async () => receiver.received.length === 1);
    expect(await mailsSent()).to.deep.equal({ sent: 1, failed: 0 });
    expect(smtp.mails).to.have.length(1);
  });

  it('quiet hours across midnight in a time zone', () => {
    const q = { start: '22:00', end: '07:00', timezone: 'Europe/Paris' };
    expect(quietUntil(q, new Date('2026-12-02T21:30:00Z'))?.toISOString()).to.equal('2026-12-03T06:00:00.000Z'); // 22:30 in Paris → 07:00
    expect(quietUntil(q, new Date('2026-12-02T05:59:00Z'))?.toISOString()).to.equal('2026-12-02T06:00:00.000Z');
    expect(quietUntil(q, new Date('2026-12-02T06:00:00Z'))).to.equal(null); // 07:00: over
    expect(quietUntil(q, new Date('2026-12-02T12:00:00Z'))).to.equal(null);
    expect(quietUntil(null, new Date())).to.equal(null);
  });

  it('the alert worker reports a host past its offline delay and sends its e-mail', async () => {
    await rule({ kind: 'host_offline', offline_delay_minutes: 5, email_to: ['ops@example.test'] });
    await run([hosts[0]!]); // the second host offline
    await sql(app, `update hosts set offline_at = now() - interval '6 minutes' where id = ?`, [hosts[1]!.id]);
    const ws = workerServicesFor(app);
    const worker = await startAlertDelivery({ ...ws, config: smtpConfig(smtp, app) }, { sweepMs: 200 });
    stops.push(async () => { await worker.close(); await ws.close(); });
    const [mail] = await waitFor('the offline e-mail', async () => (smtp.mails.length ? smtp.mails : undefined));
    expect(mail!.body).to.contain('Offline: 10.39.5.11');
    await new Promise((r) => setTimeout(r, 800)); // more sweeps: reported once
    expect(smtp.mails).to.have.length(1);
  });
});
