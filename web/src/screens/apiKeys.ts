// API keys (/api-keys): your keys, a new one (its secret shown once, with a copy button), revoke.
// Reads and writes /api/v1/auth/keys.
import { api, ApiError } from '../api.js';
import { fill, h, notice, when } from '../dom.js';
import type { UserApiKey, UserApiKeyCreated } from '../apiTypes.js';

export function apiKeysScreen(outlet: HTMLElement) {
  const list = h('div', {});
  const created = h('div', { 'aria-live': 'polite' });
  const name = h('input', { id: 'key-name', required: true, maxlength: 100, placeholder: 'e.g. inventory script' });
  const form = h('form', {
    class: 'toolbar',
    onsubmit: async (e: SubmitEvent) => {
      e.preventDefault();
      try {
        const key = await api.post<UserApiKeyCreated>('/api/v1/auth/keys', { name: name.value });
        const secret = key.key;
        const copy = h('button', { type: 'button', onclick: async () => { await navigator.clipboard?.writeText(secret).catch(() => undefined); copy.textContent = 'Copied'; } }, 'Copy');
        fill(created, h('div', { class: 'notice info', role: 'status' },
          h('p', {}, 'Your new key. It is shown only now: copy it somewhere safe.'),
          h('code', { id: 'new-key' }, secret), ' ', copy));
        name.value = '';
        await load();
      } catch (err) {
        const e2 = err as ApiError;
        fill(created, notice('error', e2.message, e2.code));
      }
    },
  }, h('label', { for: 'key-name' }, 'New key'), name, h('button', { type: 'submit' }, 'Create key'));

  async function load() {
    try {
      const keys = await api.get<UserApiKey[]>('/api/v1/auth/keys');
      fill(list, keys.length
        ? h('table', { class: 'list' },
          h('thead', {}, h('tr', {}, ['Name', 'Id', 'Created', 'Last used', ''].map((x) => h('th', { scope: 'col' }, x)))),
          h('tbody', {}, keys.map((k) => h('tr', {},
            h('td', {}, k.name), h('td', {}, h('code', {}, k.id.slice(0, 8))), h('td', {}, when(k.created_at)), h('td', {}, when(k.last_used_at)),
            h('td', {}, h('button', { type: 'button', class: 'danger', onclick: async () => {
              if (!confirm(`Revoke the key “${k.name}”? Clients using it will get 401.`)) return;
              await api.delete(`/api/v1/auth/keys/${k.id}`).catch((err: ApiError) => fill(created, notice('error', err.message, err.code)));
              await load();
            } }, 'Revoke'))))))
        : h('p', { class: 'muted' }, 'No API keys yet. A key lets a script call the API as you (Authorization: Bearer …).'));
    } catch (err) {
      const e = err as ApiError;
      fill(list, notice('error', e.message, e.code));
    }
  }
  fill(outlet, h('h1', {}, 'API keys'), form, created, list);
  void load();
}
