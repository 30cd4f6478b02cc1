// "Share…" on the map: a read-only link to this network's map (POST /api/v1/networks/<id>/share-links)
// with the view shown and, when the map shows a fixed instant (`at`, the history's tick, a
// comparison's end), optionally that instant; the person chooses how long it works. The link is
// shown once, with Copy, and where to revoke it (the network's page, shareLinks.ts). Only for those
// who may create share links (Admins and Owners, signed in): the toolbar has no Share otherwise.
import { api, apiPath } from '../api.js';
import './shareDialog.css';
import { h, when } from '../dom.js';
import { openForm } from '../forms.js';
import { VIEW_NAMES } from '../mapScreenState.js';
import { navigate } from '../main.js';

/** How long a link works: the API takes at most 90 days. */
const EXPIRIES: Array<[string, string]> = [['1', '1 day'], ['7', '7 days'], ['30', '30 days'], ['90', '90 days']];

export interface ShareTarget { networkId: string; networkName: string; view: string; /** The fixed instant the map shows (undefined: live). */ instant?: string }

export function openShareDialog(t: ShareTarget) {
  const viewName = VIEW_NAMES[t.view] ?? t.view;
  openForm({
    title: 'Share this map',
    submitLabel: 'Create link',
    top: h('p', { class: 'muted', id: 'share-map-intro' }, `A read-only link to ${t.networkName}’s map, ${viewName} view, for people who do not sign in: nothing else of the inventory is reachable through it.`),
    fields: [
      { key: 'label', label: 'What it is for', kind: 'text', placeholder: 'NOC wall screen' },
      { key: 'days', label: 'Works for', kind: 'select', options: EXPIRIES, hint: 'Revoke it sooner on the network’s page.' },
      ...(t.instant ? [{ key: 'fixed', label: `The map as of ${when(t.instant)}, not live`, kind: 'checkbox' as const }] : []),
    ],
    values: { label: '', days: '30', fixed: !!t.instant },
    submit: async (v, form) => {
      const days = Number(v.days) || 30;
      const created = await api.post<{ token: string; share_link: { expires_at: string } }>(apiPath`/api/v1/networks/${t.networkId}/share-links`, {
        label: String(v.label ?? '') || null, view: t.view,
        // A minute short of the whole days: the API's limit is counted from its own clock.
        expires_at: new Date(Date.now() + days * 86_400_000 - 60_000).toISOString(),
        at: t.instant && v.fixed ? t.instant : null,
      });
      form.close();
      showLink(t, `${location.origin}/share/${created.token}`, created.share_link.expires_at);
    },
  });
}

/** The new link, once: copy it now. */
function showLink(t: ShareTarget, url: string, expiresAt: string) {
  const opener = document.activeElement as HTMLElement | null;
  const input = h('input', { type: 'text', readonly: true, value: url, id: 'share-map-url', class: 'share-url', 'aria-label': 'The share link', onfocus: () => input.select() });
  const copied = h('span', { class: 'muted', id: 'share-map-copied', role: 'status', 'aria-live': 'polite' });
  const copy = h('button', { type: 'button', class: 'primary', id: 'share-map-copy', onclick: async () => {
    try {
      await navigator.clipboard.writeText(url);
      copied.textContent = 'Copied.';
    } catch {
      // No clipboard (an insecure page, a refusal): the link selected, for Ctrl+C.
      input.focus();
      input.select();
      copied.textContent = 'Selected: press Ctrl+C (⌘C) to copy.';
    }
  } }, 'Copy');
  const dialog = h('dialog', { class: 'form-dialog share-map-created', 'aria-labelledby': 'share-map-created-title' });
  const networkPage = `/networks/${t.networkId}`;
  dialog.append(
    h('h2', { id: 'share-map-created-title' }, 'Share link created'),
    h('div', { class: 'form-body' },
      h('p', {}, `Copy the link now: it is not shown again. It works until ${when(expiresAt)}.`),
      h('div', { class: 'share-url-row' }, input, copy), copied,
      h('p', { class: 'muted', id: 'share-map-revoke' }, 'It can be revoked on ',
        h('a', { href: networkPage, onclick: (e: MouseEvent) => { e.preventDefault(); dialog.close(); navigate(networkPage); } }, 'the network’s page'), '.')),
    h('div', { class: 'form-footer' }, h('div', { class: 'form-buttons' }, h('button', { type: 'button', id: 'share-map-close', onclick: () => dialog.close() }, 'Close'))));
  dialog.addEventListener('close', () => { dialog.remove(); if (opener?.isConnected) opener.focus(); });
  document.body.append(dialog);
  dialog.showModal();
  copy.focus();
}
