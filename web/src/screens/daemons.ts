// Daemons (/daemons): each discovery agent with its status, version and the version warnings the
// API computes, and when it was last seen. Reads GET /api/v1/daemons.
import { api, ApiError } from '../api.js';
import { fill, h, notice, when } from '../dom.js';
import type { Daemon } from '../apiTypes.js';

export function daemonsScreen(outlet: HTMLElement) {
  const body = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  fill(outlet, h('h1', {}, 'Daemons'), body);
  void (async () => {
    try {
      const daemons = await api.get<Daemon[]>('/api/v1/daemons?limit=1000');
      if (!daemons.length) {
        fill(body, notice('info', 'No daemons yet: provision one (POST /api/v1/daemons/provision) and start it with the key it is given.'));
        return;
      }
      fill(body, h('table', { class: 'list' },
        h('thead', {}, h('tr', {}, ['Name', 'Mode', 'Status', 'Version', 'Warnings', 'Last seen'].map((x) => h('th', { scope: 'col' }, x)))),
        h('tbody', {}, daemons.map((d) => h('tr', {},
          h('td', {}, d.name),
          h('td', {}, d.mode === 'server_poll' ? 'polled by the server' : 'reports to the server'),
          h('td', {}, d.is_unreachable ? h('span', { class: 'badge bad' }, 'unreachable') : d.standby ? h('span', { class: 'badge' }, 'standby') : h('span', { class: 'badge good' }, 'reachable'), d.last_error ? h('div', { class: 'muted' }, d.last_error) : null),
          h('td', {}, `${d.version ?? 'unknown'} (${d.version_status?.status ?? 'Unknown'})`),
          h('td', {}, (d.version_status?.warnings ?? []).map((w) => h('div', { class: `warning ${w.severity}` }, `${w.severity}: ${w.message}`))),
          h('td', {}, when(d.last_seen)))))));
    } catch (err) {
      const e = err as ApiError;
      fill(body, notice('error', e.message, e.code));
    }
  })();
}
