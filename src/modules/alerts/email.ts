// E-mail alerts: `alert_emails` is an outbox; the alert-delivery worker's sweep claims
// the due ones (a lease on next_attempt_at, so two workers never send one twice at once) and sends
// each as one message over SMTP (nodemailer) to its recipients. SMTP_URL says where
// (smtp://user:pass@host:587, smtps:// for implicit TLS); STARTTLS is used whenever the server
// offers it and required unless SMTP_REQUIRE_TLS=false; SMTP_CA_FILE trusts a private CA. A
// failure is tried again later (1, 2, 4… minutes) up to ALERT_EMAIL_ATTEMPTS times.
import { readFileSync } from 'node:fs';
import nodemailer from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport/index.js';
import type { AppConfig } from '../../config.js';
import { ACROSS_ORGANIZATIONS, type Db } from '../../core/db.js';
import type { Logger } from '../../core/logger.js';

export const ALERT_EMAIL_ATTEMPTS = 8;
const LEASE_SECONDS = 120;

type MailConfig = Pick<AppConfig, 'smtpUrl' | 'smtpFrom' | 'smtpRequireTls' | 'smtpCaFile'>;

export function mailTransport(config: MailConfig) {
  if (!config.smtpUrl) return null;
  const ca = config.smtpCaFile ? readFileSync(config.smtpCaFile, 'utf8') : undefined;
  return nodemailer.createTransport({
    url: config.smtpUrl,
    requireTLS: config.smtpRequireTls && !config.smtpUrl.startsWith('smtps:'),
    tls: ca ? { ca } : undefined,
    connectionTimeout: 15_000, greetingTimeout: 15_000, socketTimeout: 30_000,
  } as SMTPTransport.Options);
}

interface Claimed {
  id: string; organization_id: string; recipients: string[]; subject: string; body: string; attempts: number;
}

/** Sends every due e-mail (at most `batch`); answers how many were sent and failed. */
export async function sendDueEmails(db: Db, config: MailConfig, logger: Logger, batch = 100): Promise<{ sent: number; failed: number }> {
  const transport = mailTransport(config);
  if (!transport) return { sent: 0, failed: 0 };
  // Every organization's due messages on purpose: one sweep sends them all.
  const claimed = await db.query<Claimed>(
    `${ACROSS_ORGANIZATIONS} update alert_emails e set next_attempt_at = now() + make_interval(secs => ?)
     where (e.id, e.organization_id) in (select id, organization_id from alert_emails where status = 'pending' and next_attempt_at <= now()
                                         order by next_attempt_at limit ? for update skip locked)
     returning e.id, e.organization_id, e.recipients, e.subject, e.body, e.attempts`,
    [LEASE_SECONDS, batch]);
  let sent = 0;
  let failed = 0;
  try {
    for (const mail of claimed) {
      try {
        await transport.sendMail({ from: config.smtpFrom, to: mail.recipients, subject: mail.subject, text: mail.body });
        await db.query(`update alert_emails set status = 'sent', sent_at = now(), attempts = attempts + 1, next_attempt_at = null, last_error = null
                        where organization_id = ? and id = ?`, [mail.organization_id, mail.id]);
        sent++;
      } catch (err) {
        const attempts = mail.attempts + 1;
        const last = attempts >= ALERT_EMAIL_ATTEMPTS;
        logger.warn({ err: (err as Error).message, alert_email: mail.id, attempts }, last ? 'alert e-mail failed for good' : 'alert e-mail failed (tried again later)');
        await db.query(
          `update alert_emails set attempts = ?, last_error = ?, status = ?, next_attempt_at = case when ? then null else now() + make_interval(secs => ?) end
           where organization_id = ? and id = ?`,
          [attempts, (err as Error).message.slice(0, 1000), last ? 'failed' : 'pending', last, 60 * 2 ** (attempts - 1), mail.organization_id, mail.id]);
        failed++;
      }
    }
  } finally {
    transport.close();
  }
  return { sent, failed };
}
