// Webhooks (/webhooks, Admins: the API's rule): the organization's endpoints, each with what it gets
// (event types, networks), its payload preset (generic signed JSON, or the message ntfy, Gotify,
// Slack, Discord or Microsoft Teams takes at its own webhook URL) and its state (a webhook disabled
// because its endpoint answered 410 or failed for 5 days says so, and is re-enabled here). Create
// (the signing secret is shown once), edit, send a test delivery (a signed webhook.ping through the
// queue: it appears in the delivery log, followed until it is delivered or fails), the delivery log
// with every attempt (status code, latency, error, the answer's first bytes), send a delivery again,
// rotate the secret, delete. Reads and writes /api/v1/webhooks.
import { api, apiPath, ApiError, query } from '../api.js';
import { fill, h, notice, when } from '../dom.js';
import { confirmDialog, openForm, type Field } from '../forms.js';
import type { Route, Session } from '../main.js';
import type { Webhook, WebhookDelivery } from '../apiTypes.js';

type Preset = Webhook['preset'];

/** The presets the API has (src/modules/alerts/presets.ts), their names and the URL each takes. */
export const PRESETS: Array<[Preset, string, string]> = [
  ['generic', 'Generic (signed JSON)', 'Any endpoint of yours: the Standard Webhooks JSON {type, timestamp, data}, signed with the secret shown when the webhook is created (webhook-signature header).'],
  ['ntfy', 'ntfy', 'The topic’s URL, e.g. https://ntfy.sh/my-topic: a notification with a title and one line per change.'],
  ['gotify', 'Gotify', 'The message URL with an application token: https://gotify.example.com/message?token=…'],
  ['slack', 'Slack', 'An incoming webhook URL: https://hooks.slack.com/services/…'],
  ['discord', 'Discord', 'A channel’s webhook URL: https://discord.com/api/webhooks/…'],
  ['teams', 'Microsoft Teams', 'An incoming webhook (or Workflows) URL: the message is an Adaptive Card.'],
];
const presetName = (p: Preset) => PRESETS.find(([k]) => k === p)?.[1] ?? p;
const presetHint = (p: string) => PRESETS.find(([k]) => k === p)?.[2] ?? '';

const DISABLED_REASON: Record<string, string> = {
  gone: 'Disabled: the endpoint answered 410 Gone.',
  failing: 'Disabled: no delivery succeeded for 5 days.',
};
const LOG_PAGE = 20;

/** The body of a create or a replace: every field (PUT replaces the settings). */
const bodyOf = (w: Pick<Webhook, 'name' | 'url' | 'event_types' | 'network_ids' | 'enabled' | 'preset'>) =>
  ({ name: w.name, url: w.url, event_types: w.event_types, network_ids: w.network_ids, enabled: w.enabled, preset: w.preset });

/** A secret shown once, with a Copy button. */
function secretNotice(name: string, secret: string, rotated = false): HTMLElement {
  const copy = h('button', { type: 'button', onclick: async () => { await navigator.clipboard?.writeText(secret).catch(() => undefined); copy.textContent = 'Copied'; } }, 'Copy');
  return h('div', { class: 'notice info webhook-secret', role: 'status' },
    h('p', {}, rotated
      ? `The new signing secret of “${name}”. It is shown only now; the old one keeps signing beside it for 24 hours.`
      : `Webhook “${name}” created. Its signing secret is shown only now: keep it where the receiver checks signatures.`),
    h('code', { class: 'secret' }, secret), ' ', copy);
}

function webhookForm(s: Session, hook: Webhook | undefined, done: (saved: Webhook) => void) {
  const fields: Field[] = [
    { key: 'name', label: 'Name', kind: 'text', required: true, placeholder: 'Ops channel' },
    { key: 'preset', label: 'Payload', kind: 'select', options: PRESETS.map(([k, name]) => [k, name]), hint: presetHint(hook?.preset ?? 'generic') },
    { key: 'url', label: 'URL', kind: 'text', required: true, placeholder: 'https://…' },
    { key: 'event_types', label: 'Events', kind: 'text', required: true, placeholder: '*',
      hint: '* every event; host.* every host event; several separated by commas. alert.digest: no event, only the digests of the alert rules that name this webhook.' },
    { key: 'network_ids', label: 'Networks', kind: 'checks', options: s.networks.map((n) => [n.id, n.name]), hint: 'None checked: every network, present and future.' },
    { key: 'enabled', label: 'Enabled', kind: 'checkbox' },
  ];
  const form = openForm({
    title: hook ? `Edit webhook ${hook.name}` : 'New webhook',
    submitLabel: hook ? 'Save' : 'Create webhook',
    fields,
    values: {
      name: hook?.name ?? '', preset: hook?.preset ?? 'generic', url: hook?.url ?? '', event_types: (hook?.event_types ?? ['*']).join(', '),
      network_ids: hook?.network_ids ?? [], enabled: hook?.enabled ?? true,
    },
    submit: async (v, handle) => {
      const networks = v.network_ids as string[];
      const body = bodyOf({
        name: String(v.name), url: String(v.url), preset: v.preset as Preset, enabled: v.enabled as boolean,
        event_types: String(v.event_types).split(/[\s,]+/).filter(Boolean), network_ids: networks.length ? networks : null,
      });
      const saved = hook ? await api.put<Webhook>(apiPath`/api/v1/webhooks/${hook.id}`, body) : await api.post<Webhook>('/api/v1/webhooks', body);
      handle.close();
      done(saved);
    },
  });
  // The URL each preset takes, under its choice.
  const preset = form.dialog.querySelector<HTMLSelectElement>('select[name=preset]')!;
  const hint = form.dialog.querySelector('[data-hint-for=preset]')!;
  preset.addEventListener('change', () => { hint.textContent = presetHint(preset.value); });
}

/** One delivery of the log: its outcome, then each attempt on demand. */
function deliveryItem(d: WebhookDelivery, redeliver: () => void): HTMLElement {
  const last = d.attempt_log.at(-1);
  const outcome = last
    ? [last.status_code ? `HTTP ${last.status_code}` : 'no answer', `${last.latency_ms} ms`, last.error].filter(Boolean).join(' · ')
    : d.status === 'pending' ? 'not sent yet' : '—';
  const badge = d.status === 'delivered' ? 'good' : d.status === 'failed' ? 'bad' : '';
  return h('li', { class: `delivery ${d.status}`, 'data-delivery-id': d.id, 'data-status': d.status },
    h('div', { class: 'delivery-line' },
      h('span', { class: `badge ${badge} delivery-status` }, d.status),
      h('code', { class: 'delivery-type' }, d.type),
      h('span', { class: 'delivery-outcome' }, outcome),
      h('time', { class: 'muted', datetime: d.created_at }, when(d.created_at)),
      h('button', { type: 'button', class: 'link redeliver', onclick: redeliver }, 'Send again')),
    d.attempt_log.length ? h('details', { class: 'attempts' },
      h('summary', {}, d.attempt_log.length === 1 ? '1 attempt' : `${d.attempt_log.length} attempts`, d.status === 'pending' && d.next_attempt_at ? ` · next ${when(d.next_attempt_at)}` : ''),
      h('ol', {}, d.attempt_log.map((a) => h('li', {},
        h('span', {}, `${when(a.started_at)}: ${a.status_code ? `HTTP ${a.status_code}` : 'no answer'} in ${a.latency_ms} ms`),
        a.error ? h('div', { class: 'attempt-error' }, a.error) : null,
        a.response_excerpt ? h('pre', { class: 'excerpt' }, a.response_excerpt) : null)))) : null);
}

export function webhooksScreen(outlet: HTMLElement, _route: Route, s: Session) {
  const messages = h('div', { 'aria-live': 'polite' });
  const list = h('div', { class: 'item-list webhook-list' }, h('p', { class: 'muted' }, 'Loading…'));
  const networkName = new Map(s.networks.map((n) => [n.id, n.name]));
  /** What the last test of each webhook came to (kept across redraws). */
  const testOutcome = new Map<string, string>();
  let alive = true;
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const later = (fn: () => void, ms: number) => { const t = setTimeout(() => { timers.delete(t); if (alive) fn(); }, ms); timers.add(t); };
  const report = (err: unknown) => { const e = err as ApiError; fill(messages, notice('error', e.message, e.code)); };

  fill(outlet, h('div', { class: 'settings-screen webhooks-screen' },
    h('div', { class: 'map-head' }, h('h1', {}, 'Webhooks'),
      h('button', { type: 'button', class: 'primary', id: 'new-webhook', onclick: () => webhookForm(s, undefined, (saved) => {
        void load().then(() => fill(messages, saved.secret ? secretNotice(saved.name, saved.secret) : notice('info', `Webhook “${saved.name}” created.`)));
      }) }, 'New webhook')),
    h('p', { class: 'muted intro' }, 'An endpoint gets the events it asks for as they happen, and the digests of the alert rules that name it. Its payload is signed JSON, or the message ntfy, Gotify, Slack, Discord or Microsoft Teams takes at its own webhook URL.'),
    messages, list));

  function card(hook: Webhook): HTMLElement {
    const log = h('div', { class: 'delivery-log-body' });
    const status = h('p', { class: 'card-status', 'aria-live': 'polite' }, testOutcome.get(hook.id) ?? '');
    let shown = LOG_PAGE;
    /** The log, read again; `watch`: until that delivery is no longer pending (a test), read every second for up to 30 s. */
    const loadLog = async (watch?: { id: string; until: number; label: string; attempts: number }) => {
      try {
        const page = await api.list<WebhookDelivery>(apiPath`/api/v1/webhooks/${hook.id}/deliveries` + query({ limit: shown }));
        fill(log, page.items.length
          ? [h('ul', { class: 'deliveries' }, page.items.map((d) => deliveryItem(d, async () => {
            await api.post(apiPath`/api/v1/webhooks/${hook.id}/deliveries/${d.id}/redeliver`).catch(report);
            void loadLog({ id: d.id, until: Date.now() + 30_000, label: 'Sent again', attempts: d.attempt_log.length });
          }))),
          page.total > page.items.length ? h('button', { type: 'button', class: 'link more', onclick: () => { shown += LOG_PAGE; void loadLog(); } }, `Show more (${page.total - page.items.length} older)`) : null]
          : h('p', { class: 'muted' }, 'No delivery yet. “Send a test” sends one now.'));
        if (watch) {
          const d = page.items.find((x) => x.id === watch.id);
          // Followed until its attempt is made: delivered, failed, or to be tried again later.
          if (d && (d.status !== 'pending' || d.attempt_log.length > watch.attempts)) {
            const code = d.last_status_code ? ` (HTTP ${d.last_status_code})` : '';
            testOutcome.set(hook.id, d.status === 'delivered' ? `${watch.label}: delivered${code}.`
              : d.status === 'failed' ? `${watch.label}: failed${code}; see the delivery log.`
                : `${watch.label}: not delivered${code}; tried again ${when(d.next_attempt_at)}.`);
            // The webhook read again too: a 410 (or the last of 5 days of failures) disabled it.
            await load();
          } else if (Date.now() < watch.until) later(() => void loadLog(watch), 1000);
          else fill(status, `${watch.label}: still waiting to be sent (is a worker running?). The delivery log shows it when it goes.`);
        }
      } catch (err) {
        const e = err as ApiError;
        fill(log, notice('error', e.message, e.code));
      }
    };
    const details = h('details', { class: 'delivery-log' }, h('summary', {}, 'Delivery log'), log);
    details.addEventListener('toggle', () => { if (details.open) void loadLog(); });

    // (A disabled endpoint gets nothing, a test neither: re-enabled first.)
    const test = h('button', { type: 'button', class: 'test-webhook', disabled: !hook.enabled, title: hook.enabled ? undefined : 'Re-enable it first', onclick: async () => {
      test.disabled = true;
      testOutcome.delete(hook.id);
      fill(status, 'Sending a test…');
      try {
        const sent = await api.post<{ delivery_id: string }>(apiPath`/api/v1/webhooks/${hook.id}/test`);
        details.open = true;
        await loadLog({ id: sent.delivery_id, until: Date.now() + 30_000, label: 'Test', attempts: 0 });
      } catch (err) {
        fill(status, '');
        report(err);
      } finally {
        test.disabled = !hook.enabled;
      }
    } }, 'Send a test');

    const reenable = async () => {
      try {
        await api.put(apiPath`/api/v1/webhooks/${hook.id}`, bodyOf({ ...hook, enabled: true }));
        await load();
        fill(messages, notice('info', `Webhook “${hook.name}” enabled again.`));
      } catch (err) {
        report(err);
      }
    };
    const networks = hook.network_ids?.length ? hook.network_ids.map((id) => networkName.get(id) ?? id).join(', ') : 'All networks';
    return h('article', { class: `item-card webhook-card${hook.enabled ? '' : ' disabled'}`, 'data-webhook-id': hook.id, 'aria-label': `Webhook ${hook.name}` },
      h('div', { class: 'item-title' },
        h('h2', {}, hook.name),
        h('span', { class: 'badge preset' }, presetName(hook.preset)),
        h('span', { class: `badge ${hook.enabled ? 'good' : 'bad'} state` }, hook.enabled ? 'enabled' : 'disabled')),
      h('p', { class: 'webhook-url' }, h('code', {}, hook.url)),
      h('dl', {},
        h('dt', {}, 'Events'), h('dd', {}, hook.event_types.join(', ')),
        h('dt', {}, 'Networks'), h('dd', {}, networks),
        hook.failing_since ? [h('dt', {}, 'Failing since'), h('dd', {}, when(hook.failing_since))] : null),
      hook.enabled ? null : h('div', { class: 'notice warning disabled-reason' },
        h('span', {}, hook.disabled_reason ? DISABLED_REASON[hook.disabled_reason] ?? `Disabled (${hook.disabled_reason}).` : 'Disabled: nothing is sent to it.'), ' ',
        h('button', { type: 'button', class: 'reenable', onclick: reenable }, 'Re-enable')),
      h('div', { class: 'item-actions' },
        test,
        h('button', { type: 'button', class: 'edit-webhook', onclick: () => webhookForm(s, hook, () => void load()) }, 'Edit'),
        h('button', { type: 'button', class: 'rotate-secret', onclick: async () => {
          if (!(await confirmDialog(`A new signing secret for “${hook.name}”? The old one keeps signing beside it for 24 hours, then stops.`, 'Rotate secret'))) return;
          try {
            const rotated = await api.post<Webhook>(apiPath`/api/v1/webhooks/${hook.id}/rotate-secret`);
            fill(messages, secretNotice(hook.name, rotated.secret!, true));
          } catch (err) {
            report(err);
          }
        } }, 'Rotate secret'),
        h('span', { class: 'push' }, h('button', { type: 'button', class: 'danger delete-webhook', onclick: async () => {
          if (!(await confirmDialog(`Delete the webhook “${hook.name}” and its delivery log? Alert rules stop sending to it.`, 'Delete webhook'))) return;
          try {
            await api.delete(apiPath`/api/v1/webhooks/${hook.id}`);
            await load();
            fill(messages, notice('info', `Webhook “${hook.name}” deleted.`));
          } catch (err) {
            report(err);
          }
        } }, 'Delete'))),
      status, details);
  }

  async function load() {
    try {
      const hooks = await api.get<Webhook[]>('/api/v1/webhooks');
      // Logs left open stay open across a redraw.
      const open = new Set([...list.querySelectorAll<HTMLElement>('.webhook-card')].filter((c) => c.querySelector('details.delivery-log')?.hasAttribute('open')).map((c) => c.dataset.webhookId));
      fill(list, hooks.length ? hooks.map(card) : h('p', { class: 'muted' }, 'No webhook yet. “New webhook” adds one: your own endpoint, or a ntfy, Gotify, Slack, Discord or Teams webhook URL.'));
      for (const c of list.querySelectorAll<HTMLElement>('.webhook-card')) if (open.has(c.dataset.webhookId)) (c.querySelector('details.delivery-log') as HTMLDetailsElement).open = true;
    } catch (err) {
      const e = err as ApiError;
      fill(list, notice('error', e.message, e.code));
    }
  }
  void load();
  return () => {
    alive = false;
    for (const t of timers) clearTimeout(t);
  };
}
