// Import hosts from CSV (/hosts/import?network=): choose, drop or paste a file, see the API's dry
// run (what would be created, changed and refused, with the reasons), then Confirm, which sends the
// same file with dry_run=false: all of it is stored in one transaction, or nothing. The screen's
// state is one object changed by `set`; `draw` renders it whole (the tables are small enough).
import { api, ApiError, query } from '../api.js';
import { download, fill, h, notice } from '../dom.js';
import { navigate, type Route, type Session } from '../main.js';
import type { HostCsvImport } from '../apiTypes.js';
import './hostImport.css';

/** The API's limit (src/http/csvBody.ts): a larger file is refused before it is sent. */
const MAX_BYTES = 4 * 1024 * 1024;
const COLUMNS: Array<[string, string]> = [
  ['name', 'the host (required); rows with the same name are one host'],
  ['hostname', 'e.g. web-01.lan'],
  ['description', 'free text'],
  ['address', 'one IP address per row'],
  ['subnet', "the address's subnet, e.g. 10.0.1.0/24: created when the network has none; empty, the smallest subnet holding the address"],
  ['mac', "the address's MAC"],
  ['ports', '22/tcp;53/udp (a bare number is TCP)'],
  ['services', 'names, ;-separated'],
  ['tags', 'names of existing tags, ;-separated'],
];
const EXAMPLE = [
  'name,hostname,description,address,subnet,mac,ports,services,tags',
  'web-01,web-01.lan,Front web server,10.0.1.10,10.0.1.0/24,AA:BB:CC:00:00:10,22/tcp;443/tcp,ssh;https,',
  'router,gw.lan,Edge router,10.0.1.1,10.0.1.0/24,,22/tcp;161/udp,ssh;snmp,',
  'router,,,10.0.2.1,10.0.2.0/24,,,,',
].join('\r\n') + '\r\n';

const FIELD_LABELS: Record<string, string> = { hostname: 'Hostname', description: 'Description', ip_addresses: 'Addresses', ports: 'Ports', services: 'Services', tags: 'Tags' };

type Phase = 'choose' | 'checking' | 'preview' | 'importing' | 'done';
interface ImportState {
  phase: Phase;
  networkId: string;
  fileName?: string;
  text?: string;
  /** The dry run's answer (preview), then the commit's (done). */
  plan?: HostCsvImport;
  error?: { message: string; code?: string; refused?: HostCsvImport['refused'] };
}

export function hostImportScreen(outlet: HTMLElement, route: Route, session: Session) {
  const named = route.query.get('network');
  const first = session.networks.find((n) => n.id === named)?.id ?? session.networks[0]?.id;
  if (!first) {
    fill(outlet, h('h1', {}, 'Import hosts'), notice('info', 'There is no network to import into yet.'));
    return;
  }
  let state: ImportState = { phase: 'choose', networkId: first };
  let alive = true;
  const root = h('div', { class: 'import-screen' });
  fill(outlet, root);
  const set = (next: Partial<ImportState>) => {
    if (!alive) return;
    state = { ...state, ...next };
    draw();
  };

  /** A file's text (from the picker, a drop or the paste box): checked by a dry run at once. */
  async function check(text: string, fileName: string) {
    if (new Blob([text]).size > MAX_BYTES) return set({ phase: 'choose', error: { message: `${fileName} is larger than 4 MiB: split it into smaller files.` } });
    set({ phase: 'checking', text, fileName, plan: undefined, error: undefined });
    try {
      set({ phase: 'preview', plan: await send(text, true) });
    } catch (err) {
      set({ phase: 'choose', error: errorOf(err) });
    }
  }
  async function confirm() {
    set({ phase: 'importing', error: undefined });
    try {
      set({ phase: 'done', plan: await send(state.text!, false) });
    } catch (err) {
      // Refused rows found now (the network changed since the preview): shown like the preview's.
      set({ phase: 'preview', error: errorOf(err) });
    }
  }
  const send = (text: string, dryRun: boolean) =>
    api.postText<HostCsvImport>(`/api/v1/hosts/import/csv${query({ network_id: state.networkId, dry_run: String(dryRun) })}`, text, 'text/csv');
  const readFile = async (file: File | undefined) => { if (file) await check(await file.text(), file.name); };

  function draw() {
    const network = session.networks.find((n) => n.id === state.networkId);
    const hostsLink = `/hosts${query({ network: state.networkId })}`;
    const go = (to: string) => (e: MouseEvent) => { e.preventDefault(); navigate(to); };
    fill(root,
      h('p', { class: 'back' }, h('a', { href: hostsLink, onclick: go(hostsLink) }, '← Hosts')),
      h('h1', {}, 'Import hosts from CSV'),
      state.phase === 'done' ? null : chooser(network?.name ?? ''),
      state.error ? errorBox(state.error) : null,
      state.phase === 'checking' ? h('p', { class: 'muted', role: 'status' }, `Checking ${state.fileName}…`) : null,
      state.plan && (state.phase === 'preview' || state.phase === 'importing') ? preview(state.plan) : null,
      state.phase === 'done' && state.plan ? result(state.plan, hostsLink, go) : null);
  }

  function chooser(networkName: string) {
    const networkSelect = h('select', { id: 'import-network', disabled: state.phase === 'checking' || state.phase === 'importing' },
      session.networks.map((n) => h('option', { value: n.id, selected: n.id === state.networkId }, n.name)));
    networkSelect.addEventListener('change', () => {
      // Another network: the same file planned again against it.
      set({ networkId: networkSelect.value });
      if (state.text) void check(state.text, state.fileName ?? 'the file');
    });
    const input = h('input', { type: 'file', id: 'import-file', accept: '.csv,text/csv', class: 'visually-hidden' });
    input.addEventListener('change', () => { void readFile(input.files?.[0]); input.value = ''; });
    const drop = h('label', { class: 'drop-zone', for: 'import-file' },
      h('strong', {}, state.fileName ? `${state.fileName} — choose another file` : 'Choose a CSV file'),
      h('span', { class: 'muted' }, ' or drop it here'));
    drop.addEventListener('dragover', (e: DragEvent) => { e.preventDefault(); drop.classList.add('over'); });
    drop.addEventListener('dragleave', () => drop.classList.remove('over'));
    drop.addEventListener('drop', (e: DragEvent) => { e.preventDefault(); drop.classList.remove('over'); void readFile(e.dataTransfer?.files[0]); });
    const paste = h('textarea', { id: 'import-text', rows: 6, spellcheck: 'false', placeholder: EXAMPLE.split('\r\n').slice(0, 2).join('\n') });
    return h('section', { class: 'import-choose' },
      h('div', { class: 'toolbar' }, h('label', { for: 'import-network' }, 'Into network'), networkSelect),
      input, drop,
      h('details', { class: 'import-paste' }, h('summary', {}, 'Paste CSV instead'), paste,
        h('div', {}, h('button', { type: 'button', onclick: () => { if (paste.value.trim()) void check(paste.value, 'the pasted text'); } }, 'Preview'))),
      h('details', { class: 'import-columns' }, h('summary', {}, 'Columns'),
        h('p', {}, 'A header row names the columns, in any order; only ', h('code', {}, 'name'), ' is required. ',
          `Existing hosts of ${networkName || 'the network'} with the same name get what the file adds; nothing is removed, an empty cell changes nothing.`),
        h('dl', { class: 'columns' }, COLUMNS.map(([c, text]) => [h('dt', {}, h('code', {}, c)), h('dd', {}, text)])),
        h('button', { type: 'button', onclick: () => download(new Blob([EXAMPLE], { type: 'text/csv' }), 'hosts-example.csv') }, 'Download an example')));
  }

  function preview(plan: HostCsvImport) {
    const refused = plan.counts.rows_refused > 0;
    const busy = state.phase === 'importing';
    const nothing = !plan.created.length && !plan.changed.length && !plan.subnets_created.length;
    return h('section', { class: 'import-preview', 'aria-label': 'Preview' },
      h('h2', {}, `Preview of ${state.fileName}`),
      summary(plan, false),
      refused ? h('p', { class: 'notice error', role: 'alert' }, `${plan.counts.rows_refused} row${plan.counts.rows_refused === 1 ? ' is' : 's are'} refused: fix ${plan.counts.rows_refused === 1 ? 'it' : 'them'} and choose the file again. Nothing is imported while any row is refused.`) : null,
      refused ? refusedTable(plan.refused, plan.counts.refusals) : null,
      h('div', { class: 'import-actions' },
        h('button', { type: 'button', class: 'primary', id: 'import-confirm', disabled: refused || busy || nothing, onclick: () => void confirm() },
          busy ? 'Importing…' : `Import: create ${plan.counts.hosts_created}, change ${plan.counts.hosts_changed}`),
        h('button', { type: 'button', disabled: busy, onclick: () => set({ phase: 'choose', plan: undefined, text: undefined, fileName: undefined, error: undefined }) }, 'Cancel'),
        nothing && !refused ? h('span', { class: 'muted' }, 'Nothing to import: every host is as the file says.') : null),
      tables(plan));
  }

  function result(plan: HostCsvImport, hostsLink: string, go: (to: string) => (e: MouseEvent) => void) {
    return h('section', { class: 'import-result', 'aria-label': 'Result' },
      h('p', { class: 'notice info', role: 'status' }, `Imported ${state.fileName}: ${plan.counts.hosts_created} host${plan.counts.hosts_created === 1 ? '' : 's'} created, ${plan.counts.hosts_changed} changed, ${plan.counts.subnets_created} subnet${plan.counts.subnets_created === 1 ? '' : 's'} created.`),
      summary(plan, true),
      h('div', { class: 'import-actions' },
        h('a', { class: 'button primary', id: 'import-show-hosts', href: hostsLink, onclick: go(hostsLink) }, 'Show the hosts'),
        h('button', { type: 'button', onclick: () => set({ phase: 'choose', plan: undefined, text: undefined, fileName: undefined }) }, 'Import another file')),
      tables(plan, go));
  }

  draw();
  return () => { alive = false; };
}

function summary(plan: HostCsvImport, done: boolean) {
  const c = plan.counts;
  const item = (n: number, text: string, kind = '') => h('li', { class: kind }, h('strong', {}, String(n)), ` ${text}`);
  return h('ul', { class: 'import-counts', 'aria-label': 'Counts' },
    item(c.hosts_created, done ? 'created' : 'to create', 'created'),
    item(c.hosts_changed, done ? 'changed' : 'to change', 'changed'),
    item(c.hosts_unchanged, 'unchanged'),
    item(c.subnets_created, `subnet${c.subnets_created === 1 ? '' : 's'} ${done ? 'created' : 'to create'}`),
    c.rows_refused ? item(c.rows_refused, `row${c.rows_refused === 1 ? '' : 's'} refused`, 'refused') : null,
    h('li', { class: 'muted' }, `${plan.rows} rows read`));
}

function refusedTable(refused: HostCsvImport['refused'], total: number) {
  return h('div', { class: 'table-wrap' }, h('table', { class: 'list import-refused' },
    h('caption', {}, total > refused.length ? `Refused (the first ${refused.length} of ${total})` : 'Refused'),
    h('thead', {}, h('tr', {}, ['Row', 'Column', 'Value', 'Reason'].map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', {}, refused.map((r) => h('tr', {},
      h('td', { class: 'num' }, String(r.row)), h('td', {}, r.column ?? '—'), h('td', { class: 'value' }, r.value ?? '—'), h('td', {}, r.message))))));
}

function tables(plan: HostCsvImport, go?: (to: string) => (e: MouseEvent) => void) {
  const hostName = (name: string, id: string | null) => (go && id ? h('a', { href: `/hosts/${id}`, onclick: go(`/hosts/${id}`) }, name) : name);
  const rows = (rs: number[]) => (rs.length > 3 ? `${rs.slice(0, 3).join(', ')}…` : rs.join(', '));
  const list = (items: string[]) => items.join(', ') || '—';
  return [
    plan.changed.length ? h('div', { class: 'table-wrap' }, h('table', { class: 'list import-changed' },
      h('caption', {}, `Changed (${plan.changed.length})`),
      h('thead', {}, h('tr', {}, ['Host', 'Rows', 'Changes'].map((x) => h('th', { scope: 'col' }, x)))),
      h('tbody', {}, plan.changed.map((c) => h('tr', {},
        h('td', { class: 'host' }, hostName(c.name, c.id)), h('td', { class: 'num' }, rows(c.rows)),
        h('td', {}, h('ul', { class: 'plain changes' }, c.changes.map((x) => h('li', {},
          h('span', { class: 'field' }, x.field === 'mac_address' ? `MAC of ${x.item}` : FIELD_LABELS[x.field] ?? x.field), ': ',
          x.added ? `+ ${x.added.join(', ')}` : `${x.from ?? '—'} → ${x.to}`))))))))) : null,
    plan.created.length ? h('div', { class: 'table-wrap' }, h('table', { class: 'list import-created' },
      h('caption', {}, `Created (${plan.created.length})`),
      h('thead', {}, h('tr', {}, ['Host', 'Rows', 'Addresses', 'Ports', 'Services', 'Tags'].map((x) => h('th', { scope: 'col' }, x)))),
      h('tbody', {}, plan.created.map((c) => h('tr', {},
        h('td', { class: 'host' }, hostName(c.name, c.id), c.hostname ? h('div', { class: 'muted' }, c.hostname) : null),
        h('td', { class: 'num' }, rows(c.rows)),
        h('td', {}, c.ip_addresses.length ? c.ip_addresses.map((a) => h('div', {}, a.ip_address, h('span', { class: 'muted' }, ` ${a.subnet}`))) : '—'),
        h('td', {}, list(c.ports)), h('td', {}, list(c.services)), h('td', {}, c.tags.map((t) => h('span', { class: 'tag' }, t)))))))) : null,
    plan.subnets_created.length ? h('p', { class: 'import-subnets' }, h('strong', {}, 'Subnets created: '), plan.subnets_created.map((s) => s.cidr).join(', ')) : null,
    plan.unchanged.length ? h('p', { class: 'muted' }, `Unchanged: ${plan.unchanged.map((u) => u.name).join(', ')}`) : null,
  ];
}

function errorOf(err: unknown): ImportState['error'] {
  if (err instanceof ApiError) {
    const refused = Array.isArray(err.params?.refused) ? err.params.refused as HostCsvImport['refused'] : undefined;
    return { message: err.message, code: err.code, refused };
  }
  return { message: (err as Error).message };
}

function errorBox(e: NonNullable<ImportState['error']>) {
  return h('div', { class: 'import-error' }, notice('error', e.message, e.code), e.refused ? refusedTable(e.refused, e.refused.length) : null);
}
