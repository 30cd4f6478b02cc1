// A host's history as a person reads it: each entry of GET /api/v1/hosts/{id}/history (an instant at
// which the host or one of its children changed) with what changed, in words ("+ service https",
// "− address 10.0.0.6 removed", "port 80/tcp → 443/tcp", "host: name changed (web → renamed)").
// Long entries (a host created with 40 ports) fold after a few lines; older entries load on demand.
import { api, apiPath, ApiError } from './api.js';
import type { HostChange, HostHistoryState } from './apiTypes.js';
import { h, notice, when } from './dom.js';
import { navigate } from './main.js';

const KIND: Record<HostChange['entity'], string> = {
  host: 'host', ip_address: 'address', port: 'port', service: 'service', binding: 'binding', interface: 'interface',
};
/** Entries fetched at a time. */
const PAGE = 20;
/** Changes shown before the rest of an entry folds. */
const SHOWN = 6;

/** One change in words, and whether it adds, removes or changes something (its colour). */
export function changeText(c: Pick<HostChange, 'entity' | 'action' | 'label' | 'fields' | 'previous_label'>): { text: string; kind: 'added' | 'removed' | 'changed' } {
  const kind = KIND[c.entity] ?? c.entity;
  const fields = (c.fields ?? []).join(', ');
  if (c.entity === 'host') {
    if (c.action === 'created') return { text: `host created (${c.label})`, kind: 'added' };
    const renamed = c.previous_label !== undefined ? ` (${c.previous_label} → ${c.label})` : '';
    return { text: `host: ${fields} changed${renamed}`, kind: 'changed' };
  }
  switch (c.action) {
    case 'created': return { text: `+ ${kind} ${c.label}`, kind: 'added' };
    case 'deleted': return { text: `− ${kind} ${c.label} removed`, kind: 'removed' };
    case 'moved_in': return { text: `+ ${kind} ${c.label}, moved from another host`, kind: 'added' };
    case 'moved_out': return { text: `− ${kind} ${c.label}, moved to another host`, kind: 'removed' };
    default: return c.previous_label !== undefined
      ? { text: `${kind} ${c.previous_label} → ${c.label}`, kind: 'changed' }
      : { text: `${kind} ${c.label}: ${fields} changed`, kind: 'changed' };
  }
}

function changeItem(c: HostChange) {
  const { text, kind } = changeText(c);
  const other = c.other_host_id;
  return h('li', { class: `history-change ${kind}` }, text,
    other ? [' (', h('a', { href: `/hosts/${other}`, onclick: (e: MouseEvent) => { e.preventDefault(); navigate(`/hosts/${other}`); } }, 'that host'), ')'] : null);
}

function entry(st: HostHistoryState, newest: boolean) {
  const changes = st.changes ?? [];
  const shown = changes.length > SHOWN ? changes.slice(0, SHOWN - 1) : changes;
  const folded = changes.slice(shown.length);
  return h('li', { class: 'history-entry' },
    h('div', {},
      h('time', { datetime: st.valid_from }, when(st.valid_from)),
      newest && !st.valid_to ? h('span', { class: 'muted' }, ' (current)') : null,
      newest && st.valid_to ? h('span', { class: 'badge bad' }, `host deleted ${when(st.valid_to)}`) : null),
    h('div', {},
      h('ul', { class: 'history-changes' }, shown.map(changeItem)),
      folded.length ? h('details', {}, h('summary', {}, `${folded.length} more changes`), h('ul', { class: 'history-changes' }, folded.map(changeItem))) : null));
}

/** The History section of a host's details: its entries, newest first, and older ones on demand. */
export async function historySection(hostId: string): Promise<HTMLElement> {
  const page = (before?: string) => api.get<HostHistoryState[]>(apiPath`/api/v1/hosts/${hostId}/history` + `?${new URLSearchParams({ limit: String(PAGE), ...(before ? { before } : {}) })}`);
  const section = h('section', { class: 'host-history' }, h('h3', {}, 'History'));
  let first: HostHistoryState[];
  try {
    first = await page();
  } catch (err) {
    section.append(notice('error', (err as ApiError).message, (err as ApiError).code));
    return section;
  }
  if (!first.length) {
    section.append(h('p', { class: 'muted' }, 'No history.'));
    return section;
  }
  const list = h('ol', { class: 'history' }, first.map((st, i) => entry(st, i === 0)));
  section.append(list);
  let last = first;
  if (last.length === PAGE) {
    const more: HTMLButtonElement = h('button', {
      type: 'button', class: 'history-more',
      onclick: async () => {
        more.disabled = true;
        try {
          last = await page(last.at(-1)!.valid_from);
          list.append(...last.map((st) => entry(st, false)));
          if (last.length < PAGE) more.remove();
        } catch (err) {
          more.replaceWith(notice('error', (err as ApiError).message, (err as ApiError).code));
        } finally {
          more.disabled = false;
        }
      },
    }, 'Show older changes');
    section.append(more);
  }
  return section;
}
