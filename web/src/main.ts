// The web application's entry: who is signed in, which screen the address names, and the shell
// around it. Screens are functions of (outlet, route) that return a cleanup; each reads the API and
// renders into the outlet. Navigation is the History API, so every screen has a deep link.
import './styles.css';
import { api, whenSignedOut } from './api.js';
import { fill, h } from './dom.js';
import { signInScreen } from './screens/signIn.js';
import { mapScreen, prefetchMap } from './screens/map.js';
import { hostsScreen, hostScreen } from './screens/hosts.js';
import { daemonsScreen } from './screens/daemons.js';
import { apiKeysScreen } from './screens/apiKeys.js';
import type { Network, User } from './apiTypes.js';

export interface Session { user: User; networks: Network[] }
export interface Route { path: string; params: Record<string, string>; query: URLSearchParams }
export type Screen = (outlet: HTMLElement, route: Route, session: Session) => (() => void) | void;

const ROUTES: Array<[RegExp, Screen, string]> = [
  [/^\/networks\/(?<network>[\w-]+)\/topology\/diff$/, (o, r, s) => mapScreen(o, r, s, 'diff'), 'map'],
  [/^\/networks\/(?<network>[\w-]+)\/topology$/, (o, r, s) => mapScreen(o, r, s, 'map'), 'map'],
  [/^\/hosts$/, hostsScreen, 'hosts'],
  [/^\/hosts\/(?<host>[\w-]+)$/, hostScreen, 'hosts'],
  [/^\/daemons$/, daemonsScreen, 'daemons'],
  [/^\/api-keys$/, apiKeysScreen, 'api-keys'],
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
    const [user, networks] = await Promise.all([api.get<User>('/api/auth/me'), api.get<Network[]>('/api/v1/networks?limit=1000')]);
    return { user, networks };
  } catch {
    rememberSignedIn(false);
    return undefined;
  }
}

function shell(active: string, s: Session): { frame: HTMLElement; outlet: HTMLElement } {
  const first = s.networks[0]?.id;
  const link = (href: string, label: string, key: string) =>
    h('a', { href, 'aria-current': active === key ? 'page' : undefined, onclick: (e: MouseEvent) => { e.preventDefault(); navigate(href); } }, label);
  const outlet = h('main', { id: 'outlet' });
  const frame = h('div', { class: 'frame' },
    h('header', { class: 'top' },
      h('strong', { class: 'brand' }, 'netinventory'),
      h('nav', { 'aria-label': 'Main' },
        first ? link(`/networks/${first}/topology`, 'Map', 'map') : null,
        link('/hosts', 'Hosts', 'hosts'), link('/daemons', 'Daemons', 'daemons'), link('/api-keys', 'API keys', 'api-keys')),
      h('span', { class: 'who' }, s.user.email),
      h('button', { type: 'button', class: 'link', onclick: async () => { await api.post('/api/auth/logout').catch(() => undefined); rememberSignedIn(false); session = undefined; navigate('/signin'); } }, 'Sign out')),
    outlet);
  return { frame, outlet };
}

async function render() {
  cleanup?.();
  cleanup = undefined;
  const url = new URL(location.href);
  const route: Route = { path: url.pathname, params: {}, query: url.searchParams };
  if (route.path === '/signin' || route.path === '/register') {
    session = undefined;
    cleanup = signInScreen(root, route, async () => { rememberSignedIn(true); session = await loadSession(); navigate(url.searchParams.get('next') || '/', true); });
    return;
  }
  session ??= await loadSession();
  if (!session) return navigate(`/signin?next=${encodeURIComponent(route.path + url.search)}`, true);
  if (route.path === '/') {
    const first = session.networks[0];
    return navigate(first ? `/networks/${first.id}/topology` : '/hosts', true);
  }
  const match = ROUTES.map(([re, screen, key]) => ({ m: re.exec(route.path), screen, key })).find((x) => x.m);
  const { frame, outlet } = shell(match?.key ?? '', session);
  fill(root, frame);
  if (!match) {
    fill(outlet, h('h1', {}, 'Not found'), h('p', {}, 'No page here. ', h('a', { href: '/' }, 'Back to the map')));
    return;
  }
  route.params = { ...match.m!.groups };
  cleanup = match.screen(outlet, route, session);
}

// A session that ends (expired, signed out elsewhere) returns to the sign-in page with a message.
whenSignedOut(() => {
  if (location.pathname === '/signin') return;
  rememberSignedIn(false);
  session = undefined;
  navigate(`/signin?expired=1&next=${encodeURIComponent(location.pathname + location.search)}`, true);
});
window.addEventListener('popstate', () => void render());
// Opened on a map: its graph is asked for now, while the session loads (the map screen takes it).
const onMap = /^\/networks\/(?<network>[\w-]+)\/topology$/.exec(location.pathname);
if (onMap && localStorage.getItem(SIGNED_IN)) prefetchMap(onMap.groups!.network!, new URLSearchParams(location.search));
void render();
