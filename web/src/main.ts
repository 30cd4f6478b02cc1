// The web application's entry: who is signed in, which screen the address names, and the shell
// around it. Screens are functions of (outlet, route) that return a cleanup; each reads the API and
// renders into the outlet. Navigation is the History API, so every screen has a deep link.
import './styles.css';
import { api, whenSignedOut } from './api.js';
import { fill, h } from './dom.js';
import { signInScreen } from './screens/signIn.js';
import { mapScreen, prefetchMap } from './screens/map.js';
import { hostsScreen, hostScreen } from './screens/hosts.js';
import { hostImportScreen } from './screens/hostImport.js';
import { daemonsScreen } from './screens/daemons.js';
import { changesScreen } from './screens/changes.js';
import { apiKeysScreen } from './screens/apiKeys.js';
import { serviceDefinitionsScreen } from './screens/serviceDefinitions.js';
import { networkScreen, networksScreen } from './screens/networks.js';
import { webhooksScreen } from './screens/webhooks.js';
import { shareScreen } from './screens/share.js';
import type { CurrentUser, Network } from './apiTypes.js';
import { openSearch, searchShortcut } from './searchPalette.js';

export interface Session { user: CurrentUser; networks: Network[] }
export interface Route { path: string; params: Record<string, string>; query: URLSearchParams }
export type Screen = (outlet: HTMLElement, route: Route, session: Session) => (() => void) | void;

const ROUTES: Array<[RegExp, Screen, string]> = [
  [/^\/networks\/(?<network>[\w-]+)\/topology\/diff$/, (o, r, s) => mapScreen(o, r, s, 'diff'), 'map'],
  [/^\/networks\/(?<network>[\w-]+)\/topology$/, (o, r, s) => mapScreen(o, r, s, 'map'), 'map'],
  [/^\/hosts$/, hostsScreen, 'hosts'],
  [/^\/hosts\/import$/, hostImportScreen, 'hosts'], // before /hosts/<id>, whose pattern "import" matches
  [/^\/hosts\/(?<host>[\w-]+)$/, hostScreen, 'hosts'],
  [/^\/daemons$/, daemonsScreen, 'daemons'],
  [/^\/changes$/, changesScreen, 'changes'],
  [/^\/api-keys$/, apiKeysScreen, 'api-keys'],
  [/^\/service-definitions$/, serviceDefinitionsScreen, 'service-definitions'],
  [/^\/networks$/, networksScreen, 'networks'],
  [/^\/networks\/(?<network>[\w-]+)$/, networkScreen, 'networks'],
  [/^\/webhooks$/, webhooksScreen, 'webhooks'],
];

const root = document.getElementById('app')!;
let session: Session | undefined;
let cleanup: (() => void) | void;

export function navigate(to: string, replace = false) {
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  void render();
}

// Whether this browser signed in (not a secret: the session cookie is httpOnly). Without it the
// app goes straight to the sign-in page instead of asking the API and getting a 401.
const SIGNED_IN = 'netinventory.signed-in';
export const rememberSignedIn = (yes: boolean) => (yes ? localStorage.setItem(SIGNED_IN, '1') : localStorage.removeItem(SIGNED_IN));

async function loadSession(): Promise<Session | undefined> {
  if (!localStorage.getItem(SIGNED_IN)) return undefined;
  try {
    const [user, networks] = await Promise.all([api.get<CurrentUser>('/api/auth/me'), fetchNetworks()]);
    return { user, networks };
  } catch {
    rememberSignedIn(false);
    return undefined;
  }
}

const fetchNetworks = () => api.get<Network[]>('/api/v1/networks?limit=1000');

/** The session's networks read again (a network created, renamed or deleted): the switcher shows them at the next render. */
export async function reloadNetworks(s: Session): Promise<void> {
  s.networks = await fetchNetworks();
}

// The network last looked at: the Map link and the switcher open it.
const NETWORK = 'netinventory.network';

/** Makes `id` the network the Map link, the switcher and the pages that name none are about. */
export const useNetwork = (id: string) => localStorage.setItem(NETWORK, id);
/** The network the app is on (the one last looked at, else the first). */
export const chosenNetwork = (s: Session): string | undefined => currentNetwork({ path: '', params: {}, query: new URLSearchParams() }, s);
/** Whether the user manages the organization's settings (networks, webhooks, alert rules): the API refuses the others. */
export const isAdmin = (s: Session) => s.user.permissions === 'Owner' || s.user.permissions === 'Admin';

/** The network a page is about: the map's, the hosts page's filter, else the one last looked at, else the first. */
function currentNetwork(route: Route, s: Session): string | undefined {
  const named = route.params.network ?? route.query.get('network') ?? undefined;
  if (named && s.networks.some((n) => n.id === named)) {
    localStorage.setItem(NETWORK, named);
    return named;
  }
  const last = localStorage.getItem(NETWORK);
  return s.networks.find((n) => n.id === last)?.id ?? s.networks[0]?.id;
}

function shell(active: string, s: Session, route: Route): { frame: HTMLElement; outlet: HTMLElement } {
  const network = currentNetwork(route, s);
  const link = (href: string, label: string, key: string) =>
    h('a', { href, 'aria-current': active === key ? 'page' : undefined, onclick: (e: MouseEvent) => { e.preventDefault(); navigate(href); } }, label);
  // Another network: the same page for it (the hosts list filtered to it), the map otherwise.
  const switcher = h('select', { id: 'network-switcher', 'aria-label': 'Network' }, s.networks.map((n) => h('option', { value: n.id, selected: n.id === network }, n.name)));
  switcher.addEventListener('change', () => {
    localStorage.setItem(NETWORK, switcher.value);
    navigate(active === 'hosts' ? `/hosts?network=${encodeURIComponent(switcher.value)}`
      : active === 'networks' ? (route.params.network ? `/networks/${encodeURIComponent(switcher.value)}` : '/networks')
        : `/networks/${encodeURIComponent(switcher.value)}/topology`);
  });
  const menuToggle = h('button', { type: 'button', class: 'menu-toggle', 'aria-expanded': 'false', 'aria-controls': 'main-menu' }, 'Menu');
  menuToggle.addEventListener('click', () => {
    const open = !header.classList.contains('open');
    header.classList.toggle('open', open);
    menuToggle.setAttribute('aria-expanded', String(open));
  });
  const header = h('header', { class: 'top' },
    h('strong', { class: 'brand' }, 'netinventory'),
    h('button', { type: 'button', class: 'search-open', id: 'search-open', title: 'Search everywhere (Ctrl+K)', 'aria-keyshortcuts': 'Control+K Meta+K', onclick: () => openSearch(network, navigate) },
      'Search', h('kbd', {}, 'Ctrl K')),
    menuToggle,
    h('div', { class: 'menu', id: 'main-menu' },
      h('nav', { 'aria-label': 'Main' },
        network ? link(`/networks/${network}/topology`, 'Map', 'map') : null,
        link('/hosts', 'Hosts', 'hosts'), link('/changes', 'Changes', 'changes'), link('/daemons', 'Daemons', 'daemons'),
        link('/networks', 'Networks', 'networks'),
        isAdmin(s) ? link('/webhooks', 'Webhooks', 'webhooks') : null,
        link('/api-keys', 'API keys', 'api-keys'), link('/service-definitions', 'Service definitions', 'service-definitions'),
        // The queue dashboard (bull-board, served by the API, not a page of this app): operators only.
        s.user.operator ? h('a', { href: '/admin/queues', id: 'queue-dashboard', title: 'Queue dashboard (every organization\'s jobs)' }, 'Queues') : null),
      s.networks.length ? switcher : null,
      h('span', { class: 'who' }, s.user.email),
      h('button', { type: 'button', class: 'link', id: 'sign-out', onclick: async () => { await api.post('/api/auth/logout').catch(() => undefined); rememberSignedIn(false); session = undefined; navigate('/signin'); } }, 'Sign out')));
  const outlet = h('main', { id: 'outlet' });
  return { frame: h('div', { class: 'frame' }, header, outlet), outlet };
}

async function render() {
  cleanup?.();
  cleanup = undefined;
  const url = new URL(location.href);
  const route: Route = { path: url.pathname, params: {}, query: url.searchParams };
  // A share link's page stands alone: no session, no shell, no way to another page.
  const shared = /^\/share\/(?<token>[^/]+)$/.exec(route.path);
  if (shared) {
    cleanup = shareScreen(root, decodeURIComponent(shared.groups!.token!));
    return;
  }
  if (route.path === '/signin' || route.path === '/register') {
    session = undefined;
    cleanup = signInScreen(root, route, async () => { rememberSignedIn(true); session = await loadSession(); navigate(url.searchParams.get('next') || '/', true); });
    return;
  }
  session ??= await loadSession();
  if (!session) return navigate(`/signin?next=${encodeURIComponent(route.path + url.search)}`, true);
  if (route.path === '/') {
    const network = currentNetwork(route, session);
    return navigate(network ? `/networks/${network}/topology` : '/hosts', true);
  }
  const match = ROUTES.map(([re, screen, key]) => ({ m: re.exec(route.path), screen, key })).find((x) => x.m);
  if (match) route.params = { ...match.m!.groups };
  const { frame, outlet } = shell(match?.key ?? '', session, route);
  fill(root, frame);
  if (!match) {
    fill(outlet, h('h1', {}, 'Not found'), h('p', {}, 'No page here. ', h('a', { href: '/' }, 'Back to the map')));
    return;
  }
  cleanup = match.screen(outlet, route, session);
}

// A session that ends (expired, signed out elsewhere) returns to the sign-in page with a message.
whenSignedOut(() => {
  if (location.pathname === '/signin' || location.pathname.startsWith('/share/')) return;
  rememberSignedIn(false);
  session = undefined;
  navigate(`/signin?expired=1&next=${encodeURIComponent(location.pathname + location.search)}`, true);
});
window.addEventListener('popstate', () => void render());
// Ctrl/Cmd+K: search everywhere, once signed in (from the network the page shows, else the chosen one).
searchShortcut(() => (session ? /^\/networks\/([\w-]+)/.exec(location.pathname)?.[1] ?? chosenNetwork(session) : undefined), navigate, () => !!session);
// Opened on a map: its graph is asked for now, while the session loads (the map screen takes it).
const onMap = /^\/networks\/(?<network>[\w-]+)\/topology$/.exec(location.pathname);
if (onMap && localStorage.getItem(SIGNED_IN)) prefetchMap(onMap.groups!.network!, new URLSearchParams(location.search));
void render();
