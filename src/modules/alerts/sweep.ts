// The alert-delivery worker's periodic work (workers/alertDelivery.ts): hosts whose offline delay
// has passed since their session ended are reported (a digest without a session), then every due
// e-mail is sent. Webhook digests need nothing here: they are webhook deliveries, which the webhook
// worker sends when due (after the quiet hours too).
import type { AppConfig } from '../../config.js';
import { ACROSS_ORGANIZATIONS, type Db } from '../../core/db.js';
import type { Logger } from '../../core/logger.js';
import { sendDueEmails } from './email.js';
import { evaluateAlerts } from './evaluate.js';

/** Networks with an enabled host_offline rule and a host offline for longer than its delay: evaluated (offline items only). */
export async function sweepOfflineAlerts(db: Db, now = new Date()): Promise<number> {
  // Every organization's rules on purpose: one sweep looks after them all.
  const due = await db.query<{ organization_id: string; network_id: string }>(
    `${ACROSS_ORGANIZATIONS} select distinct r.organization_id, r.network_id from alert_rules r
     where r.enabled and r.kind = 'host_offline' and exists (
       select 1 from hosts h where h.organization_id = r.organization_id and h.network_id = r.network_id and h.offline_at is not null and not h.ignored
         and h.offline_at <= ?::timestamptz - make_interval(mins => r.offline_delay_minutes))`,
    [now.toISOString()]);
  let digests = 0;
  for (const n of due) {
    const digest = await db.transaction((tx) => evaluateAlerts(tx, n.organization_id, n.network_id, null, now));
    if (digest) digests++;
  }
  return digests;
}

export async function sweepAlerts(db: Db, config: AppConfig, logger: Logger) {
  const offline = await sweepOfflineAlerts(db);
  const mail = await sendDueEmails(db, config, logger);
  return { offline_digests: offline, ...mail };
}
