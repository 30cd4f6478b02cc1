// Daemons (/daemons): each discovery agent or daemon with its status (a daemon_poll one that stopped
// asking for work is "not running"), version and last contact; the subnets it suggests (Approve) and
// the ones it may scan (Revoke); "Scan now", the running session's phase and progress (Cancel), and
// the last finished run: the server's summary (hosts found, new, changed, unchanged, gone, with links
// to the new and gone hosts on the map and in the hosts list) and our agent's report; its discovery
// schedules (every N minutes or cron, next and last run, last error; Admins add, enable, disable and
// delete them). With no daemon, how to start one.
// Reads GET /api/v1/daemons, …/:id/targets, …/:id/sessions and …/:id/schedules; the state is kept apart from the
// drawing, and a poll (every 2 s while a session is pending or runs, else every 10 s) redraws only
// the parts of a daemon whose data changed, so a button being used is not replaced under the pointer.
import { api, apiPath, ApiError } from '../api.js';
import { fill, h, notice, when } from '../dom.js';
import { agentSteps, installBlock } from '../agentHelp.js';
import { navigate, type Route, type Session } from '../main.js';
import type { Daemon, DaemonApiKeyCreated, DaemonApprovedTarget as ApprovedTarget, DaemonTargets, DiscoverySession, DiscoverySessionSummary } from '../apiTypes.js';
import type { components } from '../../../clients/typescript/schema.js';

type DiscoverySchedule = components['schemas']['DiscoverySchedule'];

const POLL_ACTIVE_MS = 2_000;
const POLL_IDLE_MS = 10_000;
const RUNNING = ['Starting', 'Started', 'Scanning'];
const ACTIVE = ['Pending', ...RUNNING];

// ---- State ---------------------------------------------------------------------------------------

interface DaemonEntry {
  daemon: Daemon;
  targets: DaemonTargets;
  sessions: DiscoverySession[];
  schedules: DiscoverySchedule[];
}

interface PageState {
  /** undefined until the first load. */
  daemons?: DaemonEntry[];
  loadError?: ApiError;
  /** Per daemon: the last action's error, shown in its card until the next action. */
  actionErrors: Map<string, ApiError>;
  /** Actions in flight ("approve:<daemon>:<subnet>"), their buttons disabled. */
  busy: Set<string>;
  /** A daemon key was created on this page (its command is shown with it). */
  keyMade?: boolean;
}

async function loadEntries(): Promise<DaemonEntry[]> {
  const daemons = await api.get<Daemon[]>('/api/v1/daemons?limit=1000');
  return Promise.all(daemons.map(async (daemon) => {
    const [targets, sessions, schedules] = await Promise.all([
      api.get<DaemonTargets>(apiPath`/api/v1/daemons/${daemon.id}/targets`),
      api.get<DiscoverySession[]>(apiPath`/api/v1/daemons/${daemon.id}/sessions`),
      api.get<DiscoverySchedule[]>(apiPath`/api/v1/daemons/${daemon.id}/schedules`),
    ]);
    return { daemon, targets, sessions, schedules };
  }));
}

/** Sessions that occupy the daemon or wait for it, the running ones first (the list is newest first). */
export function activeSessions(sessions: DiscoverySession[]): DiscoverySession[] {
  const active = sessions.filter((s) => ACTIVE.includes(s.phase));
  return [...active.filter((s) => s.phase !== 'Pending'), ...active.filter((s) => s.phase === 'Pending').reverse()];
}

/** The newest Network session that has ended: the last run, with its report. */
export const lastFinishedRun = (sessions: DiscoverySession[]) => sessions.find((s) => !ACTIVE.includes(s.phase) && s.discovery_type.type === 'Network');

const networkBusy = (sessions: DiscoverySession[]) => sessions.some((s) => ACTIVE.includes(s.phase) && s.discovery_type.type === 'Network');

// ---- Drawing -------------------------------------------------------------------------------------

const PHASE_TEXT: Record<string, string> = {
  Pending: 'queued', Starting: 'handed to the daemon', Started: 'started', Scanning: 'scanning',
  Complete: 'complete', Failed: 'failed', Cancelled: 'cancelled',
};
/** The agent's evidence kinds (agent/scan/types.ts Evidence), in words; another kind is shown as sent. */
const EVIDENCE_TEXT: Record<string, string> = {
  tcp_open: 'an open port', tcp_refused: 'a refused connection (RST)', neighbour: 'kernel neighbour table',
  arp: 'ARP reply', icmp: 'ICMP echo reply', udp: 'a UDP answer',
};
const TYPE_TEXT: Record<string, string> = { Network: 'network scan', SelfReport: 'self-report', Docker: 'Docker' };

const typeText = (s: DiscoverySession) => TYPE_TEXT[s.discovery_type.type] ?? s.discovery_type.type;

function versionText(d: Daemon): string {
  const status = d.version_status?.status ?? 'Unknown';
  return `version ${d.version ?? 'unknown'}${status === 'Current' ? '' : ` (${status.toLowerCase()})`}`;
}

/**
 * Who runs a daemon, for what the page says of it: this project's agent announces
 * `x.y.z+netinventory-agent.…` (agent/config.ts AGENT_VERSION); any other version that parses is a
 * Scanopy daemon; no version, we cannot tell.
 */
export function daemonKind(d: Pick<Daemon, 'version'>): 'agent' | 'scanopy' | 'unknown' {
  if (/\+netinventory-agent\b/.test(d.version ?? '')) return 'agent';
  return /^v?\d+\.\d+\.\d+/.test(d.version ?? '') ? 'scanopy' : 'unknown';
}
const DAEMON_NOUN = { agent: 'the NetInventory agent', scanopy: 'the Scanopy daemon', unknown: 'the daemon' } as const;
const noun = (d: Daemon) => DAEMON_NOUN[daemonKind(d)];
const capitalized = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** How long ago, as people say it ("3 minutes ago"). */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return 'never';
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  const [n, unit] = s < 90 ? [s, 'second'] : s < 90 * 60 ? [Math.round(s / 60), 'minute'] : s < 36 * 3600 ? [Math.round(s / 3600), 'hour'] : [Math.round(s / 86_400), 'day'];
  return `${n} ${unit}${n === 1 ? '' : 's'} ago`;
}

/**
 * A server_poll daemon is reachable or not (the server's polls say); a daemon_poll one comes to the
 * server: it is running while it keeps asking for work, and not running once it stopped (is_stale:
 * the server's threshold, a few missed polls), as an agent run with --once does when its scan ends.
 */
function statusBadge(d: Daemon) {
  if (d.mode === 'server_poll' && d.is_unreachable) return h('span', { class: 'badge bad' }, 'unreachable');
  if (d.standby) return h('span', { class: 'badge' }, 'standby');
  if (!d.last_seen) return h('span', { class: 'badge' }, 'never seen');
  if (d.mode === 'server_poll') return h('span', { class: 'badge good' }, 'reachable');
  return d.is_stale ? h('span', { class: 'badge bad' }, 'not running') : h('span', { class: 'badge good' }, 'running');
}

/** Counts by name, largest first ("tcp_connect 3"); a label for the names we know. */
function countList(counts: Record<string, number>, labels: Record<string, string> = {}) {
  const rows = Object.entries(counts).sort(([a, x], [b, y]) => y - x || a.localeCompare(b));
  if (!rows.length) return h('span', { class: 'muted' }, 'none');
  return h('ul', { class: 'counts' }, rows.map(([name, n]) => h('li', {},
    h('span', { class: 'count-name', title: name }, labels[name] ?? name), h('strong', {}, String(n)))));
}

function textList(items: string[], empty: string) {
  return items.length ? h('ul', { class: 'plain' }, items.map((x) => h('li', {}, x))) : h('span', { class: 'muted' }, empty);
}

/** A link inside the app: followed by the app's own navigation (a modified click opens a tab as usual). */
function appLink(href: string, text: string, label?: string) {
  return h('a', {
    href, 'aria-label': label,
    onclick: (e: MouseEvent) => {
      if (e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
      e.preventDefault();
      navigate(href);
    },
  }, text);
}

/** The new or gone hosts of a run: each opens the map on it; all of them open in the hosts list. */
function hostLinks(run: DiscoverySession, kind: 'new' | 'gone', title: string, hosts: DiscoverySessionSummary['new_hosts'], total: number) {
  if (!hosts.length) return null;
  const onMap = (id: string) => `/networks/${run.network_id}/topology?${new URLSearchParams({ focus: id })}`;
  const inList = `/hosts?${new URLSearchParams({ network: run.network_id, ids: hosts.map((x) => x.id).join(',') })}`;
  return h('div', { class: `host-links ${kind}`, 'data-hosts': kind },
    h('p', { class: 'part-label' }, `${title} (${total}): open one on the map`),
    h('ul', { class: 'host-chips' }, hosts.map((x) => h('li', {}, appLink(onMap(x.id), x.name, `${x.name} on the map`)))),
    total > hosts.length ? h('small', { class: 'muted' }, `and ${total - hosts.length} more (the first ${hosts.length} by name are listed)`) : null,
    h('p', { class: 'list-link' }, appLink(inList, hosts.length === 1 ? 'Show it in the hosts list' : `Show ${total > hosts.length ? `these ${hosts.length}` : `all ${total}`} in the hosts list`)));
}

/** The server's summary of a run: what it did to the inventory (for every daemon, Scanopy's too). */
function summaryPart(run: DiscoverySession, s: DiscoverySessionSummary) {
  const row = (label: string, field: keyof DiscoverySessionSummary, value: Parameters<typeof h>[2]) => [h('dt', {}, label), h('dd', { 'data-field': field }, value)];
  return [
    h('p', { class: 'part-label' }, 'In the inventory'),
    h('dl', { class: 'report summary' },
      row('Hosts found', 'hosts_found', String(s.hosts_found)),
      row('New', 'hosts_new', String(s.hosts_new)),
      row('Changed', 'hosts_changed', String(s.hosts_changed)),
      row('Unchanged', 'hosts_unchanged', String(s.hosts_unchanged)),
      row('Gone', 'hosts_gone', s.hosts_gone === null ? h('span', { class: 'muted' }, 'not counted: the run did not complete') : String(s.hosts_gone)),
      row('Services found', 'services_found', String(s.services_found))),
    hostLinks(run, 'new', 'New hosts', s.new_hosts, s.hosts_new),
    hostLinks(run, 'gone', 'Gone since the last run', s.gone_hosts, s.hosts_gone ?? 0),
  ];
}

/** Why a run has no report, said of the daemon that ran it. */
function noReportText(d: Daemon, run: DiscoverySession): string {
  const kind = daemonKind(d);
  if (kind === 'agent') {
    return run.phase === 'Complete' ? 'The NetInventory agent sent no report with this run.' : 'No report: the NetInventory agent’s run ended before it sent one.';
  }
  if (kind === 'scanopy') return `No report with this run: Scanopy daemons send none${run.summary ? ' (the counts above are the server’s)' : ''}.`;
  return 'The daemon sent no report with this run.';
}

function reportPart(e: DaemonEntry) {
  const run = lastFinishedRun(e.sessions);
  if (!run) {
    return [h('h3', {}, 'Last run'), h('p', { class: 'muted' }, e.targets.approved.length ? 'No network scan has ended yet.' : 'No network scan yet: waiting for a target to be approved.')];
  }
  const report = run.report;
  const ended = `${PHASE_TEXT[run.phase] ?? run.phase}${run.finished_at ? `, ${when(run.finished_at)}` : ''}`;
  return [
    h('h3', {}, 'Last run'),
    h('p', { class: `run-outcome ${run.phase}` }, `Network scan ${ended}`),
    run.error && run.phase === 'Failed' ? h('p', { class: 'notice error run-error' }, `${capitalized(noun(e.daemon))}’s run failed: ${run.error}`) : null,
    run.error && run.phase !== 'Failed' ? h('p', { class: 'notice info run-error' }, run.error) : null,
    run.summary ? summaryPart(run, run.summary) : null,
    report ? h('p', { class: 'part-label' }, 'The agent’s own report') : null,
    report
      ? h('dl', { class: 'report' },
        h('dt', {}, 'Addresses tried'), h('dd', { 'data-field': 'addresses_tried' }, String(report.addresses_tried)),
        h('dt', {}, 'Probes sent'), h('dd', { 'data-field': 'probes_sent' }, String(report.probes_sent)),
        h('dt', {}, 'Alive by evidence'), h('dd', { 'data-field': 'alive_by_evidence' }, countList(report.alive_by_evidence, EVIDENCE_TEXT)),
        h('dt', {}, 'Services by rule'), h('dd', { 'data-field': 'services_by_rule' }, countList(report.services_by_rule)),
        h('dt', {}, 'Warnings'), h('dd', { 'data-field': 'warnings' }, textList(report.warnings, 'none')),
        h('dt', {}, 'Left incomplete'), h('dd', { 'data-field': 'incomplete' }, textList(report.incomplete, 'nothing')))
      : h('p', { class: 'muted no-report' }, noReportText(e.daemon, run)),
  ];
}

interface Actions {
  canManage: boolean;
  busy: (key: string) => boolean;
  approve(d: Daemon, subnetId: string): void;
  revoke(d: Daemon, subnetId: string): void;
  setOption(d: Daemon, subnetId: string, options: { snmp_public?: boolean; probe_raw_socket_ports?: boolean }): void;
  scan(d: Daemon): void;
  cancel(d: Daemon, s: DiscoverySession): void;
  addSchedule(d: Daemon, timing: ScheduleTiming): void;
  setScheduleEnabled(d: Daemon, s: DiscoverySchedule, enabled: boolean): void;
  deleteSchedule(d: Daemon, s: DiscoverySchedule): void;
}

function headerPart(d: Daemon) {
  const warnings = d.version_status?.warnings ?? [];
  return [
    h('div', { class: 'daemon-title' }, h('h2', {}, d.name), statusBadge(d)),
    h('p', { class: 'daemon-facts muted' },
      d.mode === 'server_poll' ? 'polled by the server' : 'reports to the server', ' · ', versionText(d), ' · last seen ', when(d.last_seen)),
    d.last_error ? h('p', { class: 'notice error' }, d.last_error) : null,
    d.is_stale ? h('p', { class: 'notice info stale' },
      `Not running: ${noun(d)} has not asked for work since ${when(d.last_seen)} (${ago(d.last_seen)}). `,
      daemonKind(d) === 'agent' ? 'An agent started with --once exits when its scan ends; start it without --once to keep it scanning.' : 'Start it again to scan.') : null,
    warnings.map((w) => h('p', { class: `warning ${w.severity}` }, `${w.severity}: ${w.message}`)),
  ];
}

function targetsPart(e: DaemonEntry, act: Actions) {
  const d = e.daemon;
  const row = (t: { subnet_id: string; cidr: string; name: string }, label: string, onclick: () => void, cls = '') => h('li', {},
    h('span', { class: 'subnet' }, h('code', {}, t.cidr), t.name && t.name !== t.cidr ? h('span', { class: 'muted' }, ` ${t.name}`) : null),
    act.canManage ? h('button', {
      type: 'button', class: cls, 'aria-label': `${label} ${t.cidr}`, disabled: act.busy(`target:${d.id}:${t.subnet_id}`), onclick,
    }, label) : null);
  // What an approval lets it do there besides the port scan: SNMP `public` (on by default), the raw printing ports (opt-in).
  const option = (t: ApprovedTarget, field: 'snmp_public' | 'probe_raw_socket_ports', text: string, title: string) => h('label', { class: 'target-option', title },
    h('input', {
      type: 'checkbox', checked: t[field] === true, disabled: !act.canManage || act.busy(`target:${d.id}:${t.subnet_id}`),
      onchange: (ev: Event) => act.setOption(d, t.subnet_id, { [field]: (ev.target as HTMLInputElement).checked }),
    }), ` ${text}`);
  const approvedRow = (t: ApprovedTarget) => {
    const li = row(t, 'Revoke', () => act.revoke(d, t.subnet_id), 'danger');
    li.append(h('span', { class: 'target-options' },
      option(t, 'snmp_public', 'SNMP public', 'Ask its live hosts over SNMP v2c with the community "public"'),
      option(t, 'probe_raw_socket_ports', 'Ports 9100–9107', 'Probe the raw printing ports (a printer prints what it receives; a host known to be a printer is never sent a payload)')));
    return li;
  };
  return [
    h('h3', {}, 'Targets'),
    h('p', { class: 'part-label' }, 'Approved: it scans these and nothing else'),
    e.targets.approved.length
      ? h('ul', { class: 'targets approved' }, e.targets.approved.map(approvedRow))
      : h('p', { class: 'muted' }, 'None yet: approve a subnet it suggests.'),
    h('p', { class: 'part-label' }, 'Suggested: subnets it is on'),
    e.targets.suggested.length
      ? h('ul', { class: 'targets suggested' }, e.targets.suggested.map((t) => row(t, 'Approve', () => act.approve(d, t.subnet_id))))
      : h('p', { class: 'muted' }, 'None to approve.'),
  ];
}

function sessionRow(d: Daemon, s: DiscoverySession, act: Actions) {
  const running = s.phase !== 'Pending';
  return h('li', { class: 'session', 'data-session-id': s.id, 'data-phase': s.phase },
    h('div', { class: 'session-line' },
      h('span', {}, h('strong', {}, typeText(s)), ` ${s.cancel_requested ? 'cancelling…' : PHASE_TEXT[s.phase] ?? s.phase}`),
      running ? h('span', { class: 'progress-text' }, `${s.progress} %`) : null,
      act.canManage && !s.cancel_requested ? h('button', {
        type: 'button', class: 'danger', 'aria-label': `Cancel the ${typeText(s)}`, disabled: act.busy(`cancel:${s.id}`), onclick: () => act.cancel(d, s),
      }, 'Cancel') : null),
    running ? h('progress', { max: 100, value: s.progress, 'aria-label': `${typeText(s)} progress` }, `${s.progress} %`) : null,
    s.started_at ? h('small', { class: 'muted' }, `since ${when(s.started_at)}`) : null);
}

function runPart(e: DaemonEntry, act: Actions) {
  const d = e.daemon;
  const active = activeSessions(e.sessions);
  const busy = networkBusy(e.sessions);
  // No network scan is queued before a subnet is approved (the first approval queues one).
  const waiting = !busy && !e.targets.approved.length;
  return [
    h('h3', {}, 'Discovery'),
    active.length ? h('ul', { class: 'sessions' }, active.map((s) => sessionRow(d, s, act))) : waiting ? null : h('p', { class: 'muted' }, 'Nothing running.'),
    waiting ? h('p', { class: 'waiting', role: 'status' }, h('strong', {}, 'Waiting for a target to be approved: '),
      act.canManage ? 'approve a subnet it suggests (Targets) and its network scan starts.' : 'an Admin approves the subnets it may scan.') : null,
    act.canManage ? h('div', { class: 'part-actions' },
      h('button', { type: 'button', class: 'primary', disabled: busy || waiting || act.busy(`scan:${d.id}`), onclick: () => act.scan(d) }, 'Scan now'),
      busy ? h('small', { class: 'muted' }, ' a network scan is queued or running') : waiting ? h('small', { class: 'muted' }, ' approve a subnet first') : null)
      : null,
  ];
}

const OUTCOME_TEXT: Record<string, string> = { queued: 'scan queued', skipped: 'skipped (a scan was already queued or running)', failed: 'failed' };

function scheduleRow(d: Daemon, s: DiscoverySchedule, act: Actions) {
  const key = `schedule:${d.id}:${s.id}`;
  return h('li', { class: `session schedule${s.enabled ? '' : ' disabled'}`, 'data-schedule-id': s.id },
    h('div', { class: 'session-line schedule-line' },
      h('span', {}, h('strong', {}, s.description), s.jitter_seconds ? h('span', { class: 'muted' }, ` (± up to ${s.jitter_seconds} s)`) : null,
        s.subnet_ids ? h('span', { class: 'muted' }, ` · ${s.subnet_ids.length} of its subnets`) : null,
        h('span', { class: 'schedule-state' }, s.enabled ? ' · enabled' : ' · disabled')),
      act.canManage ? h('span', { class: 'schedule-actions' },
        h('button', {
          type: 'button', 'aria-label': `${s.enabled ? 'Disable' : 'Enable'} the schedule ${s.description}`, disabled: act.busy(key),
          onclick: () => act.setScheduleEnabled(d, s, !s.enabled),
        }, s.enabled ? 'Disable' : 'Enable'),
        h('button', {
          type: 'button', class: 'danger', 'aria-label': `Delete the schedule ${s.description}`, disabled: act.busy(key), onclick: () => act.deleteSchedule(d, s),
        }, 'Delete')) : null),
    h('small', { class: 'muted schedule-runs' },
      s.enabled && s.next_run_at ? ['next ', when(s.next_run_at)] : 'not running',
      ' · last ', s.last_run_at ? [when(s.last_run_at), s.last_outcome ? `: ${OUTCOME_TEXT[s.last_outcome] ?? s.last_outcome}` : ''] : 'never'),
    s.disabled_reason ? h('p', { class: 'notice error schedule-disabled' }, s.disabled_reason)
      : s.last_error ? h('p', { class: 'warning schedule-error' }, `Last error: ${s.last_error}`) : null);
}

/** When a new schedule runs: every N minutes, or a cron expression read in a time zone. */
type ScheduleTiming = { every_minutes: number } | { cron: string; timezone: string };
/**
 * What is typed in each daemon's schedule form: the card's parts are redrawn after every action
 * (an error too), and a refused cron expression must still be there to correct.
 */
const scheduleDrafts = new Map<string, { kind: string; minutes: string; cron: string; zone: string }>();

function schedulesPart(e: DaemonEntry, act: Actions) {
  const d = e.daemon;
  const draft = scheduleDrafts.get(d.id) ?? { kind: 'every', minutes: '60', cron: '', zone: Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC' };
  scheduleDrafts.set(d.id, draft);
  const kind = h('select', { id: `schedule-kind-${d.id}`, class: 'schedule-kind', 'aria-label': 'How often' },
    h('option', { value: 'every' }, 'every'), h('option', { value: 'cron' }, 'at (cron)')) as HTMLSelectElement;
  const minutes = h('input', { type: 'number', min: 1, max: 527040, step: 1, value: draft.minutes, required: true, id: `schedule-every-${d.id}`, class: 'schedule-every', 'aria-label': 'Minutes' }) as HTMLInputElement;
  const cron = h('input', { type: 'text', id: `schedule-cron-${d.id}`, class: 'schedule-cron', placeholder: '0 2 * * *', value: draft.cron, 'aria-label': 'Cron expression (minute hour day month weekday)', spellcheck: 'false' }) as HTMLInputElement;
  // The browser's own time zone by default: "0 2 * * *" means 2 o'clock where the person is.
  const zone = h('input', { type: 'text', id: `schedule-zone-${d.id}`, class: 'schedule-zone', value: draft.zone, 'aria-label': 'Time zone' }) as HTMLInputElement;
  const everyPart = h('span', { class: 'schedule-every-part' }, minutes, ' minutes');
  const cronPart = h('span', { class: 'schedule-cron-part' }, cron, ' in ', zone);
  const showKind = () => {
    const byCron = kind.value === 'cron';
    everyPart.hidden = byCron;
    cronPart.hidden = !byCron;
    minutes.required = !byCron;
    cron.required = byCron;
  };
  kind.value = draft.kind;
  showKind();
  kind.addEventListener('change', () => { draft.kind = kind.value; showKind(); });
  minutes.addEventListener('input', () => { draft.minutes = minutes.value; });
  cron.addEventListener('input', () => { draft.cron = cron.value; });
  zone.addEventListener('input', () => { draft.zone = zone.value; });
  return [
    h('h3', {}, 'Schedules'),
    e.schedules.length
      ? h('ul', { class: 'sessions schedules' }, e.schedules.map((s) => scheduleRow(d, s, act)))
      : h('p', { class: 'muted' }, act.canManage ? 'None: it scans when someone presses Scan now.' : 'None: an Admin can schedule its scans.'),
    act.canManage ? h('form', {
      class: 'part-actions schedule-form',
      onsubmit: (ev: SubmitEvent) => {
        ev.preventDefault();
        act.addSchedule(d, kind.value === 'cron' ? { cron: cron.value.trim(), timezone: zone.value.trim() || 'UTC' } : { every_minutes: Number(minutes.value) });
      },
    }, h('label', { for: kind.id }, 'Scan '), kind, ' ', everyPart, cronPart, ' ',
    h('button', { type: 'submit', disabled: act.busy(`schedule-add:${d.id}`) }, 'Add schedule')) : null,
  ];
}

type Child = Parameters<typeof fill>[1];

/** One daemon's card, whose parts are redrawn only when what they show changed. */
interface Card {
  el: HTMLElement;
  parts: Record<'header' | 'targets' | 'run' | 'schedules' | 'report' | 'error', { el: HTMLElement; key: string }>;
}

function newCard(d: Daemon): Card {
  const part = (cls: string, tag: 'div' | 'section' = 'section') => ({ el: h(tag, { class: cls }), key: '(not drawn)' });
  const parts = {
    header: part('daemon-head', 'div'), error: part('daemon-error', 'div'), targets: part('daemon-targets'), run: part('daemon-run'),
    schedules: part('daemon-schedules'), report: part('daemon-report'),
  };
  parts.error.el.setAttribute('aria-live', 'polite');
  const el = h('article', { class: 'daemon-card', 'data-daemon-id': d.id, 'aria-label': `Daemon ${d.name}` },
    parts.header.el, parts.error.el, h('div', { class: 'daemon-parts' }, parts.targets.el, parts.run.el, parts.schedules.el, parts.report.el));
  return { el, parts };
}

function drawCard(card: Card, e: DaemonEntry, state: PageState, act: Actions) {
  const run = lastFinishedRun(e.sessions);
  const busyKeys = [...state.busy].filter((k) => k.includes(e.daemon.id) || e.sessions.some((s) => k.includes(s.id)));
  const error = state.actionErrors.get(e.daemon.id);
  const want: Record<keyof Card['parts'], [unknown, () => Child]> = {
    // A stale daemon's "… ago" is redrawn each minute, though nothing of it changes.
    header: [[e.daemon, e.daemon.is_stale ? Math.floor(Date.now() / 60_000) : 0], () => headerPart(e.daemon)],
    error: [error?.message, () => [error ? notice('error', error.message, error.code) : null]],
    targets: [[e.targets, busyKeys], () => targetsPart(e, act)],
    run: [[activeSessions(e.sessions), networkBusy(e.sessions), e.targets.approved.length, busyKeys], () => runPart(e, act)],
    schedules: [[e.schedules, busyKeys], () => schedulesPart(e, act)],
    report: [[run, e.daemon.version, e.targets.approved.length], () => reportPart(e)],
  };
  for (const [name, [data, draw]] of Object.entries(want) as Array<[keyof Card['parts'], [unknown, () => Child]]>) {
    const key = JSON.stringify(data) ?? '';
    if (card.parts[name].key === key) continue;
    card.parts[name].key = key;
    fill(card.parts[name].el, draw());
  }
}

// ---- A daemon key, for starting an agent ---------------------------------------------------------

function keyForm(session: Session, onCreated: () => void) {
  const result = h('div', { 'aria-live': 'polite' });
  const name = h('input', { id: 'daemon-key-name', required: true, maxlength: 100, value: 'discovery agent' });
  const network = h('select', { id: 'daemon-key-network' }, session.networks.map((n) => h('option', { value: n.id }, n.name)));
  const form = h('form', {
    class: 'toolbar key-form',
    onsubmit: async (e: SubmitEvent) => {
      e.preventDefault();
      try {
        const created = await api.post<DaemonApiKeyCreated>('/api/v1/auth/daemon', { name: name.value.trim(), network_id: network.value });
        fill(result, h('div', { class: 'notice info key-made', role: 'status' },
          h('p', {}, h('strong', {}, 'Key created. '), 'It is shown only now, in the commands below: run them on a machine inside the network to scan. The agent appears on this page once it registers.')),
        installBlock({ key: created.key }));
        onCreated();
      } catch (err) {
        const e2 = err as ApiError;
        fill(result, notice('error', e2.message, e2.code));
      }
    },
  },
  h('label', { for: 'daemon-key-name' }, 'New daemon key'), name,
  session.networks.length > 1 ? [h('label', { for: 'daemon-key-network' }, 'for'), network] : null,
  h('button', { type: 'submit' }, 'Create key'));
  return h('section', { class: 'add-agent', 'aria-label': 'Add an agent' }, form, result);
}

// ---- The screen ----------------------------------------------------------------------------------

export function daemonsScreen(outlet: HTMLElement, _route: Route, session: Session) {
  const state: PageState = { actionErrors: new Map(), busy: new Set() };
  const canManage = session.user.permissions === 'Owner' || session.user.permissions === 'Admin';
  const cards = new Map<string, Card>();
  const list = h('div', { class: 'daemon-list' }, h('p', { class: 'muted' }, 'Loading…'));
  let timer: ReturnType<typeof setTimeout> | undefined;
  let disposed = false;
  let loading: Promise<void> | undefined;
  let again = false;
  const loadNotice = h('div', { 'aria-live': 'polite' });

  /** An action on a daemon: its button disabled meanwhile, its error kept in the card, then everything read again. */
  async function act(daemon: Daemon, key: string, run: () => Promise<unknown>) {
    state.busy.add(key);
    state.actionErrors.delete(daemon.id);
    draw();
    try {
      await run();
    } catch (err) {
      state.actionErrors.set(daemon.id, err instanceof ApiError ? err : new ApiError(0, 'request_failed', (err as Error).message));
    } finally {
      state.busy.delete(key);
    }
    await refresh();
  }

  const actions: Actions = {
    canManage,
    busy: (key) => state.busy.has(key),
    approve: (d, subnetId) => void act(d, `target:${d.id}:${subnetId}`, () => api.post(apiPath`/api/v1/daemons/${d.id}/targets`, { subnet_id: subnetId })),
    revoke: (d, subnetId) => void act(d, `target:${d.id}:${subnetId}`, () => api.delete(apiPath`/api/v1/daemons/${d.id}/targets/${subnetId}`)),
    setOption: (d, subnetId, options) => void act(d, `target:${d.id}:${subnetId}`, () => api.patch(apiPath`/api/v1/daemons/${d.id}/targets/${subnetId}`, options)),
    scan: (d) => void act(d, `scan:${d.id}`, () => api.post(apiPath`/api/v1/daemons/${d.id}/sessions`)),
    cancel: (d, s) => void act(d, `cancel:${s.id}`, () => api.post(apiPath`/api/v1/daemons/${d.id}/sessions/${s.id}/cancel`)),
    addSchedule: (d, timing) => void act(d, `schedule-add:${d.id}`, () => api.post(apiPath`/api/v1/daemons/${d.id}/schedules`, timing)),
    setScheduleEnabled: (d, s, enabled) => void act(d, `schedule:${d.id}:${s.id}`, () => api.patch(apiPath`/api/v1/daemons/${d.id}/schedules/${s.id}`, { enabled })),
    deleteSchedule: (d, s) => void act(d, `schedule:${d.id}:${s.id}`, () => api.delete(apiPath`/api/v1/daemons/${d.id}/schedules/${s.id}`)),
  };

  function draw() {
    if (disposed) return;
    // A failed poll keeps what was shown, with the error above it.
    fill(loadNotice, state.loadError ? notice('error', state.loadError.message, state.loadError.code) : null);
    if (!state.daemons) {
      if (state.loadError) fill(list);
      return;
    }
    if (!state.daemons.length) {
      cards.clear();
      // Once a key was made here, its own command (above) is the one to use.
      fill(list, h('div', { class: 'notice info empty-daemons', role: 'status' }, state.keyMade
        ? h('p', {}, h('strong', {}, 'No agent yet:'), ' it appears here once it registers.')
        : [h('p', {}, h('strong', {}, 'No agent yet.'), ' A discovery agent finds the hosts and services of the subnets you approve for it:'),
          agentSteps(session.networks[0]?.id, {
            keyStep: canManage ? 'Create a daemon key (New daemon key, above; or POST /api/v1/auth/daemon).' : 'Ask an Admin for a daemon key (an Admin creates one here, or with POST /api/v1/auth/daemon).',
          })]));
      return;
    }
    const seen = new Set<string>();
    const ordered = state.daemons.map((e) => {
      seen.add(e.daemon.id);
      const card = cards.get(e.daemon.id) ?? newCard(e.daemon);
      cards.set(e.daemon.id, card);
      drawCard(card, e, state, actions);
      return card.el;
    });
    for (const id of [...cards.keys()]) if (!seen.has(id)) cards.delete(id);
    // Re-appending the same elements keeps them (and the focus inside them) when the order is unchanged.
    if (ordered.some((el, i) => list.children[i] !== el) || list.children.length !== ordered.length) fill(list, ordered);
  }

  /**
   * Reads everything again and schedules the next poll. One read at a time: asked during a read
   * (after an action), another read follows it, so the answer includes the action.
   */
  function refresh(): Promise<void> {
    if (loading) {
      again = true;
      return loading;
    }
    loading = (async () => {
      do {
        again = false;
        try {
          state.daemons = await loadEntries();
          state.loadError = undefined;
        } catch (err) {
          state.loadError = err instanceof ApiError ? err : new ApiError(0, 'request_failed', (err as Error).message);
        }
      } while (again && !disposed);
      loading = undefined;
      draw();
      schedule();
    })();
    return loading;
  }

  function schedule() {
    clearTimeout(timer);
    if (disposed) return;
    const active = state.daemons?.some((e) => e.sessions.some((s) => ACTIVE.includes(s.phase)));
    timer = setTimeout(() => void refresh(), active ? POLL_ACTIVE_MS : POLL_IDLE_MS);
  }

  fill(outlet, h('div', { class: 'daemons-screen' }, h('h1', {}, 'Daemons'), canManage ? keyForm(session, () => { state.keyMade = true; void refresh(); }) : null, loadNotice, list));
  void refresh();
  return () => {
    disposed = true;
    clearTimeout(timer);
  };
}
