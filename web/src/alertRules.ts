// A network's alert rules, on the network's page: each rule names a kind of change
// (a new host, a host offline after a delay, back online, a service or port added or removed, a new
// MAC for an address, a vendor never seen), when not to send (quiet hours in a time zone) and where
// to (webhooks of the organization, e-mail addresses). After each scan of the network the changes of
// every enabled rule go out as one digest per channel. Reads and writes /api/v1/alert_rules (Admins
// write; everyone who sees the network reads).
import { api, apiPath, ApiError, query } from './api.js';
import { fill, h, notice } from './dom.js';
import { confirmDialog, openForm, type Field, type FormHandle } from './forms.js';
import { isAdmin, type Session } from './main.js';
import type { AlertRule, Webhook } from './apiTypes.js';

type Kind = AlertRule['kind'];

/** The kinds in words, in the order the form offers them. */
export const KIND_TEXT: Record<Kind, string> = {
  host_new: 'A new host appears',
  host_offline: 'A host goes offline',
  host_online: 'A host is back online',
  service_added: 'A service appears on a host',
  service_removed: 'A service disappears from a host',
  port_added: 'A port opens on a host',
  port_removed: 'A port closes on a host',
  mac_changed: 'An address answers with another MAC',
  vendor_new: 'A MAC vendor never seen before',
};

const PATH = '/api/v1/alert_rules';
const DEFAULT_ZONE = (() => {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
})();

const splitList = (text: string) => text.split(/[\s,;]+/).map((x) => x.trim()).filter(Boolean);

/** "after 10 min offline", "quiet 22:00–07:00 Europe/Paris", "to: ntfy, ops@example.com". */
function ruleDetails(rule: AlertRule, hookNames: Map<string, string>): string[] {
  const parts: string[] = [];
  if (rule.kind === 'host_offline') parts.push(rule.offline_delay_minutes ? `after ${rule.offline_delay_minutes} min offline` : 'at the first scan that misses it');
  if (rule.quiet_hours) parts.push(`quiet ${rule.quiet_hours.start}–${rule.quiet_hours.end} ${rule.quiet_hours.timezone}`);
  const to = [...rule.webhook_ids.map((id) => hookNames.get(id) ?? 'a deleted webhook'), ...rule.email_to];
  parts.push(to.length ? `to ${to.join(', ')}` : 'no channel: nothing is sent');
  return parts;
}

function ruleForm(networkId: string, rule: AlertRule | undefined, hooks: Webhook[], done: () => void): FormHandle {
  const fields: Field[] = [
    { key: 'kind', label: 'Alert when', kind: 'select', options: (Object.keys(KIND_TEXT) as Kind[]).map((k) => [k, KIND_TEXT[k]]) },
    { key: 'offline_delay_minutes', label: 'Delay before reporting (minutes offline)', kind: 'number', min: 0, max: 10080,
      hint: 'A host back online sooner is never reported. 0: at the first scan that misses it.' },
    { key: 'webhook_ids', label: 'Send to webhooks', kind: 'checks', options: hooks.map((w) => [w.id, `${w.name} (${w.preset})`]),
      hint: hooks.length ? 'Each gets one digest per scan with the changes of every rule that names it.' : 'No webhook yet: add one on the Webhooks page.' },
    { key: 'email_to', label: 'Send to e-mail addresses', kind: 'text', placeholder: 'ops@example.com, oncall@example.com',
      hint: 'Separated by commas; sent through the server’s mail settings (SMTP_URL).' },
    { key: 'quiet_start', label: 'Quiet hours from', kind: 'time' },
    { key: 'quiet_end', label: 'Quiet hours until', kind: 'time',
      hint: 'Nothing is sent between these times (crossing midnight when the end is earlier); the digest goes when they end. Leave both empty for none.' },
    { key: 'quiet_timezone', label: 'Quiet hours time zone', kind: 'text', placeholder: 'Europe/Paris' },
    { key: 'enabled', label: 'Enabled', kind: 'checkbox' },
  ];
  const form = openForm({
    title: rule ? `Edit alert rule: ${KIND_TEXT[rule.kind]}` : 'New alert rule',
    submitLabel: rule ? 'Save' : 'Create rule',
    fields,
    values: {
      kind: rule?.kind ?? 'host_new', offline_delay_minutes: rule?.offline_delay_minutes ?? 10, webhook_ids: rule?.webhook_ids ?? [],
      email_to: (rule?.email_to ?? []).join(', '), quiet_start: rule?.quiet_hours?.start ?? '', quiet_end: rule?.quiet_hours?.end ?? '',
      quiet_timezone: rule?.quiet_hours?.timezone ?? DEFAULT_ZONE, enabled: rule?.enabled ?? true,
    },
    submit: async (v, handle) => {
      const kind = v.kind as Kind;
      const start = String(v.quiet_start);
      const end = String(v.quiet_end);
      if (!!start !== !!end) throw new Error('Quiet hours need both a start and an end (or neither).');
      const body = {
        network_id: networkId, kind, enabled: v.enabled,
        offline_delay_minutes: kind === 'host_offline' ? Number(v.offline_delay_minutes) || 0 : 0,
        quiet_hours: start ? { start, end, timezone: String(v.quiet_timezone) || 'UTC' } : null,
        webhook_ids: v.webhook_ids, email_to: splitList(String(v.email_to)),
      };
      if (rule) await api.put(apiPath`/api/v1/alert_rules/${rule.id}`, body);
      else await api.post(PATH, body);
      handle.close();
      done();
    },
  });
  // The delay is for "goes offline" only: shown with that kind.
  const kind = form.dialog.querySelector<HTMLSelectElement>('select[name=kind]')!;
  const delay = form.dialog.querySelector('input[name=offline_delay_minutes]')!.closest('.field') as HTMLElement;
  const sync = () => { delay.hidden = kind.value !== 'host_offline'; };
  kind.addEventListener('change', sync);
  sync();
  return form;
}

/** The section of the network's page: its rules, and (Admins) new, edit, delete. */
export function alertRulesSection(networkId: string, s: Session): HTMLElement {
  const admin = isAdmin(s);
  const list = h('div', { 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Loading…'));
  const messages = h('div', { 'aria-live': 'polite' });
  let hooks: Webhook[] = [];
  const load = async () => {
    try {
      const [rules, webhooks] = await Promise.all([
        api.get<AlertRule[]>(`${PATH}${query({ network_id: networkId, limit: 100 })}`),
        // Only Admins read webhooks (the API's rule): the others see rules without their names.
        admin ? api.get<Webhook[]>('/api/v1/webhooks').catch(() => []) : Promise.resolve([]),
      ]);
      hooks = webhooks;
      const names = new Map(hooks.map((w) => [w.id, w.name]));
      fill(list, rules.length
        ? h('ul', { class: 'rules' }, rules.map((rule) => h('li', { class: `rule${rule.enabled ? '' : ' disabled'}`, 'data-rule-id': rule.id, 'data-kind': rule.kind },
          h('div', { class: 'rule-text' },
            h('strong', {}, KIND_TEXT[rule.kind] ?? rule.kind), rule.enabled ? null : h('span', { class: 'badge' }, 'disabled'),
            h('div', { class: 'muted rule-details' }, ruleDetails(rule, names).join(' · '))),
          admin ? h('div', { class: 'rule-actions' },
            h('button', { type: 'button', class: 'edit-rule', onclick: () => ruleForm(networkId, rule, hooks, () => void load()) }, 'Edit'),
            h('button', { type: 'button', class: 'danger delete-rule', onclick: async () => {
              if (!(await confirmDialog(`Delete the alert rule “${KIND_TEXT[rule.kind]}”? The alerts it made stay.`, 'Delete rule'))) return;
              await api.delete(apiPath`/api/v1/alert_rules/${rule.id}`).catch((err: ApiError) => fill(messages, notice('error', err.message, err.code)));
              await load();
            } }, 'Delete')) : null)))
        : h('p', { class: 'muted' }, admin ? 'No alert rule: nothing is sent when this network changes.' : 'No alert rule.'));
    } catch (err) {
      const e = err as ApiError;
      fill(list, notice('error', e.message, e.code));
    }
  };
  void load();
  return h('section', { class: 'item-card alert-rules', 'aria-labelledby': 'alert-rules-title' },
    h('div', { class: 'item-title' }, h('h2', { id: 'alert-rules-title' }, 'Alert rules'),
      admin ? h('button', { type: 'button', id: 'new-alert-rule', class: 'primary', onclick: () => ruleForm(networkId, undefined, hooks, () => void load()) }, 'New alert rule') : null),
    h('p', { class: 'muted intro' }, 'After each scan of this network, the changes the enabled rules ask for go out together: one digest per webhook or address.'),
    messages, list);
}
