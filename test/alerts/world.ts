// The alert tests' world: a tenant with a daemon on 10.39.4.0/24 whose Network sessions report
// hosts as the agent does (tests/discovery/presence.spec.ts), a webhook receiver and a real SMTP
// server on 127.0.0.1 (smtp-server: STARTTLS with a self-signed certificate made by openssl, AUTH
// PLAIN/LOGIN required, AUTH refused before STARTTLS).
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SMTPServer } from 'smtp-server';
import type { TestApp } from '../support/app.js';
import { expectOk } from '../support/client.js';
import type { DaemonClient } from '../daemons/world.js';
import { hostReport, postHost } from '../discovery/reports.js';

export interface HostSpec {
  id: string;
  ip: string;
  mac?: string;
  vendor?: string;
  ports?: number[];
  services?: Array<{ name: string; port: number }>;
}

const networkType = (subnetIds: string[]) => ({
  type: 'Network', subnet_ids: subnetIds, host_naming_fallback: 'BestService', snmp_credentials: { default_credential: null, ip_overrides: [] }, probe_raw_socket_ports: false,
});

/** One Network session of `d` over `subnetId` that reports `hosts` and completes; answers its id. */
export async function runSession(d: DaemonClient, networkId: string, subnetId: string, hosts: HostSpec[], phase: string | null = 'Complete'): Promise<string> {
  const id = randomUUID();
  const update = { session_id: id, daemon_id: d.id, network_id: networkId, phase: 'Scanning', discovery_type: networkType([subnetId]), progress: 10, error: null, started_at: new Date().toISOString(), finished_at: null };
  expectOk(await d.post(`/api/v1/discovery/${id}/update`, update));
  for (const h of hosts) {
    const ports = h.ports ?? [22];
    const services = h.services ?? [{ name: 'SSH', port: 22 }];
    const r = hostReport(d, networkId, {
      hostId: h.id, hostname: null, interfaces: [{ id: portId(h.id, 999_999), subnet_id: subnetId, ip_address: h.ip, mac_address: h.mac ?? null }],
      ports: [...new Set([...ports, ...services.map((s) => s.port)])].map((number) => ({ id: portId(h.id, number), number })),
      services: services.map((s) => ({ id: portId(h.id, s.port + 100000), name: s.name, ports: [s.port] })),
    });
    (r.interfaces[0] as Record<string, unknown>).mac_vendor = h.vendor ?? null;
    await postHost(d, r);
  }
  // null: the session is left running (the daemon is killed, say).
  if (phase) expectOk(await d.post(`/api/v1/discovery/${id}/update`, { ...update, phase, progress: 100, finished_at: new Date().toISOString() }));
  return id;
}

/** Stable ids of a host's children (the agent derives them from what identifies them: the same on every run). */
function portId(hostId: string, n: number): string {
  const hex = n.toString(16).padStart(12, '0');
  return `${hostId.slice(0, 24)}${hex}`;
}

export interface Mail { from: string; to: string[]; subject: string; body: string; secure: boolean; user: string | undefined }

export interface SmtpServer {
  port: number;
  caFile: string;
  mails: Mail[];
  /** AUTH attempts refused (wrong password, or before STARTTLS). */
  refusedAuth: number;
  close(): Promise<void>;
}

export const SMTP_USER = 'alerts';
export const SMTP_PASSWORD = 'smtp-secret';

/** A real SMTP server on 127.0.0.1: STARTTLS (self-signed certificate for 127.0.0.1), AUTH PLAIN/LOGIN required. */
export async function startSmtpServer(): Promise<SmtpServer> {
  const dir = mkdtempSync(join(tmpdir(), 'netinv-smtp-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1',
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  const mails: Mail[] = [];
  const state = { refusedAuth: 0 };
  const server = new SMTPServer({
    secure: false, // plain SMTP that offers STARTTLS
    key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')),
    authMethods: ['PLAIN', 'LOGIN'], authOptional: false, allowInsecureAuth: false,
    logger: false,
    onAuth(auth, session, callback) {
      if (session.secure && auth.username === SMTP_USER && auth.password === SMTP_PASSWORD) return callback(null, { user: auth.username });
      state.refusedAuth++;
      return callback(new Error('Invalid username or password'));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const [head, ...rest] = raw.split(/\r?\n\r?\n/);
        const subject = /^Subject: (.*)$/im.exec(head!)?.[1] ?? '';
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '', to: session.envelope.rcptTo.map((r) => r.address), subject,
          body: rest.join('\n\n'), secure: session.secure, user: session.user as string | undefined,
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.server.address() as AddressInfo).port,
    caFile: join(dir, 'cert.pem'),
    mails,
    get refusedAuth() { return state.refusedAuth; },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The app's config with this SMTP server as SMTP_URL (its certificate trusted). */
export const smtpConfig = (smtp: SmtpServer, app: TestApp, password = SMTP_PASSWORD) => ({
  ...app.services.config, smtpUrl: `smtp://${SMTP_USER}:${password}@127.0.0.1:${smtp.port}`, smtpFrom: 'netinventory@example.test', smtpCaFile: smtp.caFile, smtpRequireTls: true,
});
