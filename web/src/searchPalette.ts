// Search everywhere (Ctrl/Cmd+K, or the header's Search): hosts, addresses, MACs, services, subnets
// and tags of the networks the user may see (GET /api/v1/search), opened on the map. A modal
// <dialog>: the browser traps focus in it and closes it on Escape.
import { api, query } from './api.js';
import type { components } from '../../clients/typescript/schema.js';
import { fill, h } from './dom.js';

type SearchResult = components['schemas']['SearchResult'];

const KIND_LABEL: Record<string, string> = { host: 'Host', ip_address: 'Address', mac_address: 'MAC', service: 'Service', subnet: 'Subnet', tag: 'Tag' };
const DEBOUNCE_MS = 150;

/** Where a result opens: its host selected on its network's map; a subnet in view; a tag as the map's filter. */
export function resultHref(r: SearchResult, currentNetwork: string | undefined): string | undefined {
  const network = r.network_id ?? currentNetwork;
  if (!network) return undefined;
  const map = `/networks/${encodeURIComponent(network)}/topology`;
  if (r.kind === 'tag') return `${map}${query({ tag: r.id })}`;
  // A subnet by its node's id: a bare id in `focus` is a host's (the host page's deep link).
  return `${map}${query({ focus: r.host_id ?? (r.kind === 'subnet' ? `subnet:${r.id}` : r.id) })}`;
}

/** Opens the search dialog; `go` follows a result (the app's navigate). */
export function openSearch(currentNetwork: string | undefined, go: (href: string) => void): void {
  document.querySelector('dialog.search-dialog')?.remove();
  const input = h('input', { type: 'search', id: 'search-everywhere', placeholder: 'Host, address, MAC, service, subnet or tag', 'aria-label': 'Search everywhere', autocomplete: 'off', 'aria-controls': 'search-results' });
  const list = h('ul', { id: 'search-results', role: 'listbox', 'aria-label': 'Results' });
  const status = h('p', { class: 'muted search-status', role: 'status' });
  const dialog = h('dialog', { class: 'search-dialog', 'aria-label': 'Search everywhere' }, input, status, list);
  document.body.append(dialog);
  dialog.addEventListener('close', () => dialog.remove());
  dialog.addEventListener('click', (e: MouseEvent) => { if (e.target === dialog) dialog.close(); }); // a click beside it
  let results: SearchResult[] = [];
  let active = 0;
  let asked = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const open = (r: SearchResult | undefined) => {
    const href = r && resultHref(r, currentNetwork);
    if (!href) return;
    dialog.close();
    go(href);
  };
  const render = () => {
    fill(list, results.map((r, k) => h('li', { role: 'option', id: `search-result-${k}`, 'aria-selected': k === active ? 'true' : 'false', class: k === active ? 'active' : '', onclick: () => open(r) },
      h('span', { class: `search-kind kind-${r.kind}` }, KIND_LABEL[r.kind ?? ''] ?? r.kind), h('span', { class: 'search-label' }, r.label),
      r.detail ? h('span', { class: 'search-detail muted' }, r.detail) : null)));
    if (results.length) input.setAttribute('aria-activedescendant', `search-result-${active}`);
    else input.removeAttribute('aria-activedescendant');
    list.querySelector('.active')?.scrollIntoView({ block: 'nearest' });
  };
  const ask = async (text: string) => {
    const mine = ++asked;
    try {
      const found = await api.get<SearchResult[]>(`/api/v1/search${query({ q: text, limit: 20 })}`);
      if (mine !== asked) return; // a later keystroke's answer wins
      results = found;
      active = 0;
      status.textContent = found.length ? '' : `Nothing matches “${text}”.`;
      render();
    } catch (err) {
      if (mine === asked) status.textContent = (err as Error).message;
    }
  };
  input.addEventListener('input', () => {
    clearTimeout(timer);
    const text = input.value.trim();
    if (!text) {
      asked++;
      results = [];
      status.textContent = '';
      render();
      return;
    }
    timer = setTimeout(() => void ask(text), DEBOUNCE_MS);
  });
  input.addEventListener('keydown', (e: KeyboardEvent) => {
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      if (!results.length) return;
      active = (active + (e.key === 'ArrowDown' ? 1 : results.length - 1)) % results.length;
      render();
    } else if (e.key === 'Enter') {
      e.preventDefault();
      open(results[active]);
    } else if (e.key === 'Escape') {
      // A search field's own Escape would only clear it: one press closes the dialog.
      e.preventDefault();
      dialog.close();
    }
  });
  dialog.showModal();
  input.focus();
}

/** Ctrl+K / Cmd+K anywhere opens the search (when `enabled`: signed in). */
export function searchShortcut(currentNetwork: () => string | undefined, go: (href: string) => void, enabled: () => boolean): void {
  document.addEventListener('keydown', (e: KeyboardEvent) => {
    if ((e.ctrlKey || e.metaKey) && !e.altKey && !e.shiftKey && e.key.toLowerCase() === 'k' && enabled()) {
      e.preventDefault();
      openSearch(currentNetwork(), go);
    }
  });
}
