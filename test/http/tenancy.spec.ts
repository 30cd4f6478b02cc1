// Tenancy, roles and credentials over every protected route (decisions §1, §2), plus API key
// management and login.
//
// The route matrix enumerates `routes` from src/routes.ts: every protected route must have an entry in
// FIXTURES (a concrete, valid request), else the matrix fails — so a new route is covered as soon as it
// exists. Routes are checked one module (path prefix) per test, each test over a fresh app and world;
// a test reports every failing route of its module at once.
//
// Anonymous requests are rate limited per client IP at capacity 10 (decisions §4); every request here
// that is expected to end up anonymous (401s, logins, refused keys) is sent from a fresh loopback
// address (`callFrom(freshLoopbackIp(), …)`) so that the limiter never answers in place of what is tested.
import { expect } from 'chai';
import { createHash, randomBytes, randomInt, randomUUID } from 'node:crypto';
import { routes } from '../../src/routes.js';
import type { RouteDef } from '../../src/http/pipeline.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { call, expectError, expectOk, type ApiResponse, type Credential } from '../support/client.js';
import {
  callFrom, createKey, createNetwork, createUser, freshLoopbackIp, login, PASSWORD, registerTenant, type Tenant,
} from '../support/world.js';

// ---- Roles as the product decisions define them (not imported from src, on purpose) ----------
type Role = 'Owner' | 'Admin' | 'Member' | 'Viewer';
const ROLES: Role[] = ['Viewer', 'Member', 'Admin', 'Owner'];
const RANK: Record<Role, number> = { Viewer: 1, Member: 2, Admin: 3, Owner: 4 };

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const base62 = (n: number) => Array.from({ length: n }, () => BASE62[randomInt(62)]).join('');
const uniq = (label: string) => `${label}-${randomBytes(4).toString('hex')}`;
const sha256Hex = (s: string) => createHash('sha256').update(s).digest('hex');
const KEY_FORMAT = /^scp_u_[0-9A-Za-z]{32}$/;

// Values that must not collide within one host / organization.
let counter = 0;
const next = () => ++counter;
const portNumber = () => 1000 + (next() % 60000);
const ifIndex = () => 100 + next();
const freshCidr = () => { const n = next(); return `172.${16 + ((n >> 8) % 16)}.${n % 256}.0/24`; };

// ---- The world every matrix test starts from -------------------------------------------------
interface Person {
  id: string;
  auth: Credential;
  /** The person's own API key, created with the default role (the person's). */
  key: { id: string; key: string };
}

/** One network of an organization with one entity of each network-level kind on it. */
interface Place {
  network: string;
  cidr: string;
  ipPrefix: string;
  subnet: string;
  host: string;
  ipAddress: string;
  /** Bound to `service` by `binding`. */
  port: string;
  /** Bound by nobody. */
  freePort: string;
  service: string;
  binding: string;
  interface: string;
  dependency: string;
  /** A provisioned (server_poll) daemon, and its daemon API key. */
  daemon: string;
  daemonKey: string;
  /** An alert rule of the network, and a digest (issue 39.4; the digest is stored as a session's end stores it, once the world is built). */
  alertRule: string;
  alert: string;
}

const ipIn = (p: Place) => `${p.ipPrefix}.${10 + (next() % 240)}`;

async function makePlace(url: string, auth: Credential, network: string, n: number): Promise<Place> {
  const post = async (path: string, body: unknown) => expectOk(await call(url, 'POST', path, { auth, body }), 201).id as string;
  const ipPrefix = `10.${n}.0`;
  const cidr = `${ipPrefix}.0/24`;
  const subnet = await post('/api/v1/subnets', { cidr, name: `lan-${n}`, network_id: network });
  const host = await post('/api/v1/hosts', { name: `host-${n}`, network_id: network });
  const ipAddress = await post('/api/v1/ip-addresses', { host_id: host, subnet_id: subnet, ip_address: `${ipPrefix}.5` });
  const port = await post('/api/v1/ports', { host_id: host, number: 80, protocol: 'Tcp' });
  const freePort = await post('/api/v1/ports', { host_id: host, number: 443, protocol: 'Tcp' });
  const service = await post('/api/v1/services', { host_id: host, name: `web-${n}`, service_definition: 'Nginx' });
  const binding = await post('/api/v1/bindings', { service_id: service, type: 'Port', port_id: port });
  const iface = await post('/api/v1/interfaces', { host_id: host, if_index: 1 });
  const dependency = await post('/api/v1/dependencies', {
    name: `dep-${n}`, network_id: network, color: 'Blue', members: { type: 'Services', service_ids: [service] },
  });
  const provisioned = expectOk(await call(url, 'POST', '/api/v1/daemons/provision', { auth, body: { name: `daemon-${n}`, network_id: network, url: 'http://10.0.0.1:60073' } }), 201);
  return {
    network, cidr, ipPrefix, subnet, host, ipAddress, port, freePort, service, binding, interface: iface, dependency,
    daemon: provisioned.daemon.id, daemonKey: provisioned.daemon.api_key_id,
    alertRule: await post('/api/v1/alert_rules', { network_id: network, kind: 'host_new' }), alert: '',
  };
}

interface World {
  a: Tenant;
  b: Tenant;
  owner: Person;
  admin: Person;
  member: Person;
  viewer: Person;
  bOwner: Person;
  /** A's "Default" network, granted to the Member and the Viewer. */
  sharedNet: string;
  /** A second network of A that nobody below Admin is granted. */
  privateNet: string;
  /** A's network-level entities on the shared network, and their twins on the private one. */
  inside: Place;
  outside: Place;
  tagId: string;
  /** A spare Viewer of A for the /users/:id routes. */
  targetUserId: string;
  /** Keys of A's Owner limited to a lower role. */
  roleKeys: Record<'Viewer' | 'Member' | 'Admin', string>;
  /** A's Owner's key, Owner role, limited to `sharedNet`. */
  scopedKey: string;
  disabledKey: string;
  expiredKey: string;
  /** Organization B's entities of every kind. */
  bPlace: Place;
  bTagId: string;
  /** A's webhook endpoint and one of its deliveries (a ping). */
  webhookId: string;
  deliveryId: string;
  /** A's custom service definition, and B's. */
  serviceDefinitionId: string;
  bServiceDefinitionId: string;
}

/** A custom service definition's body (issue 38.6). */
const serviceDefinitionBody = (name: string) => ({
  name, category: 'Web', ports: [8080], probe: { type: 'http', path: '/about' }, match: { field: 'body', pattern: 'acme' },
});

async function setExpiredInDb(app: TestApp, keyId: string): Promise<void> {
  await app.services.orm.em.fork().execute(`update user_api_keys set expires_at = now() - interval '1 minute' where id = ?`, [keyId]);
}

async function buildWorld(app: TestApp): Promise<World> {
  const url = app.url;
  // The independent parts are made concurrently: the world is built before most tests of this file.
  const tenantB = (async () => {
    const b = await registerTenant(url, 'beta');
    const [bKey, bPlace, bTag, bDefinition] = await Promise.all([
      createKey(url, b.owner),
      makePlace(url, b.owner, b.defaultNetworkId, 1),
      call(url, 'POST', '/api/v1/tags', { auth: b.owner, body: { name: 'beta-tag', color: 'Green' } }).then((r) => expectOk(r, 201)),
      call(url, 'POST', '/api/v1/service_definitions', { auth: b.owner, body: serviceDefinitionBody('beta-definition') }).then((r) => expectOk(r, 201)),
    ]);
    return { b, bOwner: { id: b.ownerId, auth: b.owner, key: bKey }, bPlace, bTagId: bTag.id as string, bServiceDefinitionId: bDefinition.id as string };
  })();
  const a = await registerTenant(url, 'alpha');
  const privateNet = await createNetwork(url, a.owner, 'Private');
  const person = async (permissions: Role, nets: string[]): Promise<Person> => {
    const u = await createUser(url, a.owner, permissions, nets);
    return { ...u, key: await createKey(url, u.auth) };
  };
  const keyOf = async (body: Record<string, unknown>) => (await createKey(url, a.owner, body)).key;
  const [ownerKey, admin, member, viewer, target, tag, viewerKey, memberKey, adminKey, scopedKey, disabled, expired, inside, outside] = await Promise.all([
    createKey(url, a.owner),
    person('Admin', []),
    person('Member', [a.defaultNetworkId]),
    person('Viewer', [a.defaultNetworkId]),
    call(url, 'POST', '/api/v1/users', {
      auth: a.owner, body: { email: `${uniq('target')}@example.test`, password: PASSWORD, permissions: 'Viewer', network_ids: [] },
    }).then((r) => expectOk(r, 201)),
    call(url, 'POST', '/api/v1/tags', { auth: a.owner, body: { name: 'alpha-tag', color: 'Green' } }).then((r) => expectOk(r, 201)),
    keyOf({ name: 'viewer-role', permissions: 'Viewer' }),
    keyOf({ name: 'member-role', permissions: 'Member' }),
    keyOf({ name: 'admin-role', permissions: 'Admin' }),
    keyOf({ name: 'scoped', network_ids: [a.defaultNetworkId] }),
    // Disabled: created enabled, then turned off through the API.
    (async () => {
      const key = await createKey(url, a.owner, { name: 'disabled' });
      expectOk(await call(url, 'PUT', `/api/v1/auth/keys/${key.id}`, { auth: a.owner, body: { name: 'disabled', is_enabled: false } }));
      return key;
    })(),
    // Expired: created with an expiry ahead, then moved into the past in the database.
    (async () => {
      const key = await createKey(url, a.owner, { name: 'expired', expires_at: new Date(Date.now() + 3600_000).toISOString() });
      await setExpiredInDb(app, key.id);
      return key;
    })(),
    makePlace(url, a.owner, a.defaultNetworkId, 1),
    makePlace(url, a.owner, privateNet, 2),
  ]);
  // A webhook endpoint (a public address: nothing is sent, no worker runs here) and a ping's delivery.
  const webhook = expectOk(await call(url, 'POST', '/api/v1/webhooks', { auth: a.owner, body: { name: 'alpha-hook', url: 'https://example.com/hook' } }), 201);
  const ping = expectOk(await call(url, 'POST', `/api/v1/webhooks/${webhook.id}/test`, { auth: a.owner }), 202);
  const definition = expectOk(await call(url, 'POST', '/api/v1/service_definitions', { auth: a.owner, body: serviceDefinitionBody('alpha-definition') }), 201);
  const b = await tenantB;
  await Promise.all([inside, outside, b.bPlace].map(async (p) => { p.alert = await makeAlert(app, p.network); }));
  await Promise.all([endedScan(inside.daemon, app), endedScan(b.bPlace.daemon, app)]); // a scan's changes in each organization
  return {
    webhookId: webhook.id, deliveryId: ping.delivery_id, serviceDefinitionId: definition.id,
    a, owner: { id: a.ownerId, auth: a.owner, key: ownerKey }, admin, member, viewer,
    sharedNet: a.defaultNetworkId, privateNet, inside, outside, tagId: tag.id, targetUserId: target.id,
    roleKeys: { Viewer: viewerKey, Member: memberKey, Admin: adminKey }, scopedKey, disabledKey: disabled.key, expiredKey: expired.key,
    ...b,
  };
}

// ---- One concrete request per protected route -------------------------------------------------
type PlaceKind = 'network' | 'subnet' | 'host' | 'ipAddress' | 'port' | 'freePort' | 'service' | 'binding' | 'interface' | 'dependency' | 'daemon' | 'daemonKey' | 'alertRule' | 'alert';
type IdKind = PlaceKind | 'tag' | 'user' | 'apiKey' | 'webhook' | 'serviceDefinition';
type Entity = 'Network' | 'Subnet' | 'Host' | 'IPAddress' | 'Port' | 'Service' | 'Binding' | 'Interface' | 'Dependency' | 'Daemon' | 'AlertRule' | 'Alert';
/** The ids a request may name: a place's, plus the organization-level ones. */
type Ids = Place & { tag: string; user: string; apiKey: string; webhook: string; delivery: string; serviceDefinition: string };

interface Fixture {
  /** The lowest role allowed (decisions §2: Viewer reads; Member writes inventory; Admin manages tags, networks, users; Owner the organization). */
  role: Role;
  /** Key management and organization settings: a signed-in session only (decisions §2). */
  sessionOnly?: boolean;
  /**
   * Reaches beyond any one network (users, networks, tags, webhooks: their writes, and webhooks'
   * reads too): refused to an API key limited to some networks, even the Owner's (issue 10.1).
   */
  organizationWide?: boolean;
  /** What `:id` names. */
  id?: IdKind;
  /** A valid body. */
  body?: (p: Ids) => unknown;
  /** The body is this media type's text (the CSV import), not JSON. */
  contentType?: string;
  /** A query string (with `?`). */
  query?: (p: Ids) => string;
  /** Network-level: the entity that a request aimed at a network outside the caller's reach is refused on (403 entity_access_denied). */
  outside?: Entity;
  /** The allowed call runs on a freshly made entity of this kind (default: the `:id` of a DELETE), so the world stays whole. */
  fresh?: IdKind;
  /** A create: the kind of entity it makes. */
  creates?: IdKind;
  /** Kinds the body must name fresh at every create (e.g. a port nobody binds yet). */
  freshInBody?: PlaceKind[];
  /** Status of the allowed call (default 200). */
  status?: number;
  /** Runs on the fresh entity before the allowed call (e.g. deleting the network a restore brings back). */
  afterFresh?: (id: string, app: TestApp, w: World) => Promise<void>;
  /** The allowed call answers a file (an export), not the envelope. */
  file?: boolean;
  /** The allowed call answers a stream (Server-Sent Events): its status and type are checked, then it is closed. */
  stream?: boolean;
  /** The route names an entity (`:id`) but answers others (its children, a job). */
  answersOther?: boolean;
  /** More checks on the allowed call. */
  check?: (data: any, ctx: { app: TestApp; w: World; who: Person; ids: Ids }) => Promise<void> | void;
}

const net = (p: Ids) => `?network_id=${p.network}`;
/** Daemons of the cancel fixture → the scan queued for them. */
const scanOf = new Map<string, string>();
/** A Network scan of the daemon that ended with a summary (what the Changes page lists), its id kept as the daemon's scan. */
async function endedScan(daemonId: string, app: TestApp): Promise<void> {
  const id = randomUUID();
  await app.services.orm.em.fork().execute(
    `insert into discovery_sessions (id, organization_id, network_id, daemon_id, discovery_type, phase, finished_at, summary)
     select ?, organization_id, network_id, id, '{"type":"Network"}'::jsonb, 'Complete', now(), '{"hosts_found":0,"hosts_new":0,"hosts_changed":0,"hosts_unchanged":0,"hosts_gone":0,"services_found":0,"new_hosts":[],"gone_hosts":[],"scanned_subnet_ids":[],"compared_with_session_id":null}'::jsonb
     from daemons where id = ?`, [id, daemonId]);
  scanOf.set(daemonId, id);
}
/** Daemons of the schedule fixtures → the schedule made for them. */
const scheduleOf = new Map<string, string>();
const makeSchedule = async (id: string, app: TestApp, w: World) => {
  scheduleOf.set(id, expectOk(await call(app.url, 'POST', `/api/v1/daemons/${id}/schedules`, { auth: w.owner.auth, body: { every_minutes: 60 } }), 201).id as string);
};
/** An alert digest of the network, as a session's end stores it (issue 39.4). */
async function makeAlert(app: TestApp, networkId: string): Promise<string> {
  const id = randomUUID();
  await app.services.orm.em.fork().execute(
    `insert into alerts (id, organization_id, network_id, items) select ?, organization_id, id, '[{"kind":"host_new","host_id":null,"host_name":"web"}]'::jsonb from networks where id = ?`,
    [id, networkId]);
  return id;
}
/** Networks of the share link revoke fixture → the link made on each. */
const shareLinkOf = new Map<string, string>();
const makeShareLink = async (networkId: string, app: TestApp, w: World) => {
  const body = { expires_at: new Date(Date.now() + 86_400_000).toISOString() };
  shareLinkOf.set(networkId, expectOk(await call(app.url, 'POST', `/api/v1/networks/${networkId}/share-links`, { auth: w.owner.auth, body }), 201).share_link.id as string);
};
/** Networks deleted for the restore fixture → an instant at which they existed. */
const deletedAt = new Map<string, string>();

/** A bulk delete of one fresh entity: deleted, and nothing else. */
const bulkDelete = (path: string, kind: IdKind, role: Role, outside?: Entity, extra: Partial<Fixture> = {}): Fixture => ({
  ...extra, role, body: (p) => ({ ids: [p[kind]] }), outside, fresh: kind,
  check: async (data, { app, w, who, ids }) => {
    expect(data).to.deep.equal({ deleted_count: 1, requested_count: 1 });
    expectError(await call(app.url, 'GET', `${path}/${ids[kind]}`, { auth: who.auth }), 404, 'entity_not_found');
    const untouched = ({ tag: w.tagId, user: w.targetUserId, webhook: w.webhookId, serviceDefinition: w.serviceDefinitionId } as Record<string, string>)[kind] ?? w.inside[kind as PlaceKind];
    if (untouched) expectOk(await call(app.url, 'GET', `${path}/${untouched}`, { auth: w.owner.auth }));
  },
});
/** A CSV export: a header row and the caller's rows. */
const exportCsv = (query?: (p: Ids) => string, extra: Partial<Fixture> = {}): Fixture => ({
  role: 'Viewer', ...extra, file: true, query, outside: query ? 'Network' : undefined,
  check: (body) => { expect(String(body).split('\r\n')[0]).to.match(/^id,/); },
});

/** A bulk create of one item (the create's body, in a list): created, and answered as a list with its count. */
const bulkCreate = (role: Role, item: (p: Ids) => unknown, outside?: Entity, extra: Partial<Fixture> = {}): Fixture => ({
  ...extra, role, status: 201, body: (p) => [item(p)], outside,
  check: (data) => {
    expect(data.count).to.equal(1);
    expect(data.items).to.have.length(1);
  },
});

/** The standard routes of a network-level resource: list, create, get, replace, delete, history, bulk delete, CSV export. */
function inventory(path: string, kind: PlaceKind, entity: Entity, create: { body: (p: Ids) => unknown; outside: Entity; freshInBody?: PlaceKind[] }, put: (p: Ids) => unknown): Record<string, Fixture> {
  return {
    [`GET ${path}`]: { role: 'Viewer', query: net, outside: 'Network' },
    [`POST ${path}`]: { role: 'Member', status: 201, creates: kind, body: create.body, outside: create.outside, freshInBody: create.freshInBody },
    [`GET ${path}/:id`]: { role: 'Viewer', id: kind, outside: entity },
    [`PUT ${path}/:id`]: { role: 'Member', id: kind, body: put, outside: entity },
    [`DELETE ${path}/:id`]: { role: 'Member', id: kind, outside: entity },
    [`GET ${path}/:id/history`]: { role: 'Viewer', id: kind, outside: entity },
    [`POST ${path}/bulk-delete`]: bulkDelete(path, kind, 'Member', entity),
    [`GET ${path}/export/csv`]: exportCsv(net),
  };
}

const FIXTURES: Record<string, Fixture> = {
  'GET /api/auth/me': { role: 'Viewer' },
  'POST /api/auth/me': { role: 'Viewer' },

  'GET /api/v1/users': { role: 'Admin' },
  'POST /api/v1/users': {
    role: 'Admin', organizationWide: true, status: 201, creates: 'user',
    body: () => ({ email: `${uniq('new')}@example.test`, password: PASSWORD, permissions: 'Viewer', network_ids: [] }),
  },
  'GET /api/v1/users/:id': { role: 'Admin', id: 'user' },
  'PUT /api/v1/users/:id': { role: 'Admin', organizationWide: true, id: 'user', body: (p) => ({ permissions: 'Member', network_ids: [p.network] }) },
  'PUT /api/v1/users/:id/admin': { role: 'Admin', organizationWide: true, id: 'user', body: (p) => ({ permissions: 'Viewer', network_ids: [p.network] }) },
  'DELETE /api/v1/users/:id': { role: 'Admin', organizationWide: true, id: 'user' },
  'POST /api/v1/users/bulk-delete': bulkDelete('/api/v1/users', 'user', 'Admin', undefined, { organizationWide: true }),
  'GET /api/v1/users/export/csv': exportCsv(undefined, { role: 'Admin' }),

  'GET /api/v1/organizations/current': { role: 'Viewer' },
  'PUT /api/v1/organizations/current': { role: 'Owner', sessionOnly: true, organizationWide: true, body: () => ({ name: 'Alpha renamed', api_access_enabled: true }) },

  'POST /api/v1/auth/keys': { role: 'Viewer', sessionOnly: true, status: 201, creates: 'apiKey', body: () => ({ name: uniq('key') }) },
  'GET /api/v1/auth/keys': { role: 'Viewer', sessionOnly: true },
  'GET /api/v1/auth/keys/:id': { role: 'Viewer', sessionOnly: true, id: 'apiKey' },
  'PUT /api/v1/auth/keys/:id': { role: 'Viewer', sessionOnly: true, id: 'apiKey', body: () => ({ name: uniq('renamed') }) },
  'POST /api/v1/auth/keys/:id/rotate': { role: 'Viewer', sessionOnly: true, id: 'apiKey', fresh: 'apiKey' },
  'DELETE /api/v1/auth/keys/:id': { role: 'Viewer', sessionOnly: true, id: 'apiKey' },
  'POST /api/v1/auth/keys/bulk-delete': bulkDelete('/api/v1/auth/keys', 'apiKey', 'Viewer', undefined, { sessionOnly: true }),
  'GET /api/v1/auth/keys/export/csv': exportCsv(undefined, { sessionOnly: true }),

  'GET /api/v1/networks': { role: 'Viewer' },
  'POST /api/v1/networks': { role: 'Admin', organizationWide: true, status: 201, creates: 'network', body: () => ({ name: uniq('net') }) },
  'GET /api/v1/networks/:id': { role: 'Viewer', id: 'network', outside: 'Network' },
  'PUT /api/v1/networks/:id': { role: 'Admin', organizationWide: true, id: 'network', body: () => ({ name: uniq('net') }), outside: 'Network' },
  'PATCH /api/v1/networks/:id': { role: 'Admin', organizationWide: true, id: 'network', body: () => ({ name: uniq('net') }), outside: 'Network' },
  'DELETE /api/v1/networks/:id': { role: 'Admin', organizationWide: true, id: 'network', outside: 'Network' },
  'GET /api/v1/networks/:id/history': { role: 'Viewer', id: 'network', outside: 'Network' },
  'GET /api/v1/networks/:id/contents': {
    role: 'Viewer', id: 'network', outside: 'Network', answersOther: true,
    check: (data) => { expect(data).to.have.all.keys('hosts', 'services', 'subnets', 'dependencies', 'daemons', 'daemon_api_keys'); },
  },
  'POST /api/v1/networks/bulk-delete': bulkDelete('/api/v1/networks', 'network', 'Admin', 'Network', { organizationWide: true }),
  // Share links (read-only links to a network's map): listed by the network's readers, made by a signed-in Admin, revoked by an Admin.
  'GET /api/v1/networks/:id/share-links': { role: 'Viewer', id: 'network', outside: 'Network', answersOther: true },
  'POST /api/v1/networks/:id/share-links': {
    role: 'Admin', sessionOnly: true, id: 'network', outside: 'Network', answersOther: true, status: 201, body: () => ({ expires_at: new Date(Date.now() + 86_400_000).toISOString() }),
    check: (data) => { expect(data.token).to.match(/^scp_s_[0-9A-Za-z]{32}$/); },
  },
  'DELETE /api/v1/networks/:id/share-links/:share_link_id': {
    role: 'Admin', id: 'network', outside: 'Network', answersOther: true, afterFresh: makeShareLink,
    check: (data) => { expect(data.status).to.equal('revoked'); },
  },
  'GET /api/v1/networks/export/csv': exportCsv(),
  'POST /api/v1/networks/:id/restore': {
    role: 'Admin', organizationWide: true, id: 'network', fresh: 'network', outside: 'Network',
    // The allowed call restores a fresh network deleted after `at`; the refusals name a live one, as of now.
    afterFresh: async (id, app, w) => {
      deletedAt.set(id, expectOk(await call(app.url, 'GET', `/api/v1/networks/${id}`, { auth: w.owner.auth })).updated_at);
      expectOk(await call(app.url, 'DELETE', `/api/v1/networks/${id}`, { auth: w.owner.auth }));
    },
    query: (p) => `?at=${encodeURIComponent(deletedAt.get(p.network) ?? new Date().toISOString())}`,
  },

  'GET /api/v1/tags': { role: 'Viewer' },
  'POST /api/v1/tags': { role: 'Admin', organizationWide: true, status: 201, creates: 'tag', body: () => ({ name: uniq('tag'), color: 'Blue' }) },
  'GET /api/v1/tags/:id': { role: 'Viewer', id: 'tag' },
  'PUT /api/v1/tags/:id': { role: 'Admin', organizationWide: true, id: 'tag', body: () => ({ name: uniq('tag'), color: 'Red' }) },
  'PATCH /api/v1/tags/:id': { role: 'Admin', organizationWide: true, id: 'tag', body: () => ({ color: 'Green' }) },
  'DELETE /api/v1/tags/:id': { role: 'Admin', organizationWide: true, id: 'tag' },
  'GET /api/v1/tags/:id/history': { role: 'Viewer', id: 'tag' },
  'POST /api/v1/tags/bulk-delete': bulkDelete('/api/v1/tags', 'tag', 'Admin', undefined, { organizationWide: true }),
  'PUT /api/v1/hosts/:destination/consolidate/:other': {
    role: 'Member', id: 'host', fresh: 'host', outside: 'Host', answersOther: true,
    check: async (data, { app, w, ids }) => {
      expect(data.id).to.equal(w.inside.host);
      expectError(await call(app.url, 'GET', `/api/v1/hosts/${ids.host}`, { auth: w.owner.auth }), 404, 'entity_not_found');
    },
  },
  'PUT /api/v1/tags/assign': {
    role: 'Member', body: (p) => ({ entity_type: 'Host', entity_id: p.host, tag_ids: [p.tag] }), outside: 'Host',
    check: async (data, { app, w, ids }) => {
      expect(data.tag_ids).to.deep.equal([ids.tag]);
      expect(expectOk(await call(app.url, 'GET', `/api/v1/hosts/${ids.host}`, { auth: w.owner.auth })).tags).to.deep.equal([ids.tag]);
    },
  },
  'POST /api/v1/tags/assign/bulk-add': { role: 'Member', body: (p) => ({ entity_type: 'Service', entity_ids: [p.service], tag_id: p.tag }), outside: 'Service' },
  'POST /api/v1/tags/assign/bulk-remove': { role: 'Member', body: (p) => ({ entity_type: 'Service', entity_ids: [p.service], tag_id: p.tag }), outside: 'Service' },
  'GET /api/v1/tags/export/csv': exportCsv(),

  ...inventory('/api/v1/subnets', 'subnet', 'Subnet',
    { body: (p) => ({ cidr: freshCidr(), name: uniq('lan'), network_id: p.network }), outside: 'Network' },
    (p) => ({ cidr: p.cidr, name: uniq('lan') })),
  'PATCH /api/v1/subnets/:id': { role: 'Member', id: 'subnet', body: () => ({ name: uniq('lan') }), outside: 'Subnet' },

  ...inventory('/api/v1/hosts', 'host', 'Host',
    { body: (p) => ({ name: uniq('host'), network_id: p.network }), outside: 'Network' },
    (p) => ({ id: p.host, name: uniq('host'), hidden: false, tags: [] })),
  'PATCH /api/v1/hosts/:id': { role: 'Member', id: 'host', body: () => ({ name: uniq('host') }), outside: 'Host' },
  // The import's access is the host create's (routes.ts); it writes into the network of its network_id.
  'POST /api/v1/hosts/import/csv': {
    role: 'Member', query: (p) => `?network_id=${p.network}&dry_run=false`, outside: 'Network', contentType: 'text/csv',
    body: () => `name,hostname\n${uniq('imported')},imported.lan\n`,
    check: async (data, { app, who }) => {
      expect(data.counts).to.include({ hosts_created: 1, rows_refused: 0 });
      expect(expectOk(await call(app.url, 'GET', `/api/v1/hosts/${data.created[0].id}`, { auth: who.auth }))).to.include({ hostname: 'imported.lan' });
    },
  },

  ...inventory('/api/v1/ip-addresses', 'ipAddress', 'IPAddress',
    { body: (p) => ({ host_id: p.host, subnet_id: p.subnet, ip_address: ipIn(p) }), outside: 'Host' },
    (p) => ({ subnet_id: p.subnet, ip_address: ipIn(p) })),

  ...inventory('/api/v1/ports', 'port', 'Port',
    { body: (p) => ({ host_id: p.host, number: portNumber(), protocol: 'Udp' }), outside: 'Host' },
    () => ({ number: portNumber(), protocol: 'Tcp' })),

  ...inventory('/api/v1/services', 'service', 'Service',
    { body: (p) => ({ host_id: p.host, name: uniq('svc'), service_definition: 'Nginx' }), outside: 'Host' },
    () => ({ name: uniq('svc'), service_definition: 'PostgreSQL' })),

  ...inventory('/api/v1/bindings', 'binding', 'Binding',
    { body: (p) => ({ service_id: p.service, type: 'Port', port_id: p.freePort }), outside: 'Service', freshInBody: ['freePort'] },
    (p) => ({ type: 'Port', port_id: p.port })),

  ...inventory('/api/v1/interfaces', 'interface', 'Interface',
    { body: (p) => ({ host_id: p.host, if_index: ifIndex() }), outside: 'Host' },
    () => ({ if_index: ifIndex(), if_name: 'eth0' })),

  ...inventory('/api/v1/dependencies', 'dependency', 'Dependency',
    { body: (p) => ({ name: uniq('dep'), network_id: p.network, color: 'Blue', members: { type: 'Services', service_ids: [p.service] } }), outside: 'Network' },
    (p) => ({
      name: uniq('dep'), network_id: p.network, color: 'Teal', dependency_type: 'RequestPath', edge_style: 'Straight',
      members: { type: 'Services', service_ids: [p.service] }, tags: [],
    })),
  'PATCH /api/v1/dependencies/:id': { role: 'Member', id: 'dependency', body: () => ({ name: uniq('dep') }), outside: 'Dependency' },
  // Bulk creates: the create's access and, item by item, its network rule.
  'POST /api/v1/hosts/bulk': bulkCreate('Member', (p) => ({ name: uniq('host'), network_id: p.network }), 'Network'),
  'POST /api/v1/subnets/bulk': bulkCreate('Member', (p) => ({ cidr: freshCidr(), name: uniq('lan'), network_id: p.network }), 'Network'),
  'POST /api/v1/dependencies/bulk': bulkCreate('Member', (p) => ({ name: uniq('dep'), network_id: p.network, color: 'Blue', members: { type: 'Services', service_ids: [p.service] } }), 'Network'),
  'POST /api/v1/tags/bulk': bulkCreate('Admin', () => ({ name: uniq('tag'), color: 'Blue' }), undefined, { organizationWide: true }),

  // Daemons: Viewer reads, Admin manages (decisions §2, §7).
  'GET /api/v1/daemons': { role: 'Viewer', query: net, outside: 'Network' },
  'POST /api/v1/daemons/provision': {
    role: 'Admin', status: 201, creates: 'daemon', outside: 'Network',
    body: (p) => ({ name: uniq('daemon'), network_id: p.network, url: 'http://10.0.0.3:60073' }),
    check: (data) => {
      expect(data.daemon_api_key).to.match(/^scp_d_[0-9A-Za-z]{32}$/);
    },
  },
  'GET /api/v1/daemons/:id': { role: 'Viewer', id: 'daemon', outside: 'Daemon' },
  'PUT /api/v1/daemons/:id': { role: 'Admin', id: 'daemon', body: () => ({ name: uniq('daemon') }), outside: 'Daemon' },
  'DELETE /api/v1/daemons/:id': { role: 'Admin', id: 'daemon', outside: 'Daemon' },
  'POST /api/v1/daemons/bulk-delete': bulkDelete('/api/v1/daemons', 'daemon', 'Admin', 'Daemon'),
  'GET /api/v1/daemons/export/csv': exportCsv(net),
  'POST /api/v1/daemons/:id/retry-connection': { role: 'Admin', id: 'daemon', outside: 'Daemon' },
  'POST /api/v1/daemons/:id/accept-suggested-host': {
    role: 'Admin', id: 'daemon', fresh: 'daemon', outside: 'Daemon',
    // A suggestion comes from a self-report matching a person's host (test/discovery/selfReport.spec.ts); here it is set directly.
    afterFresh: async (id, app, w) => {
      await app.services.orm.em.fork().execute('update daemons set suggested_host_id = ? where id = ?', [w.inside.host, id]);
    },
  },
  'GET /api/v1/daemons/:id/history': { role: 'Viewer', id: 'daemon', outside: 'Daemon' },
  'GET /api/v1/daemons/:id/sessions': { role: 'Viewer', id: 'daemon', outside: 'Daemon', answersOther: true },
  'POST /api/v1/daemons/:id/sessions': {
    role: 'Admin', id: 'daemon', fresh: 'daemon', status: 201, outside: 'Daemon', answersOther: true,
    // A scan needs an approved subnet; the approval queues the first scan, cancelled so that "scan now" may queue one.
    afterFresh: async (id, app, w) => {
      const first = await approveFirstTarget(id, app, w);
      if (first) expectOk(await call(app.url, 'POST', `/api/v1/daemons/${id}/sessions/${first}/cancel`, { auth: w.owner.auth }), 202);
    },
  },
  'POST /api/v1/daemons/:id/sessions/:session_id/cancel': {
    role: 'Admin', id: 'daemon', fresh: 'daemon', status: 202, outside: 'Daemon', answersOther: true,
    // The allowed call cancels the scan that approving a fresh daemon's first subnet queued (the refusals name no session of theirs).
    afterFresh: async (id, app, w) => {
      const queued = await approveFirstTarget(id, app, w)
        ?? expectOk(await call(app.url, 'POST', `/api/v1/daemons/${id}/sessions`, { auth: w.owner.auth }), 201).id as string;
      scanOf.set(id, queued);
    },
  },
  'GET /api/v1/daemons/:id/targets': { role: 'Viewer', id: 'daemon', outside: 'Daemon', answersOther: true },
  'POST /api/v1/daemons/:id/targets': { role: 'Admin', id: 'daemon', outside: 'Daemon', answersOther: true, body: (p) => ({ subnet_id: p.subnet }) },
  'PATCH /api/v1/daemons/:id/targets/:subnet_id': {
    role: 'Admin', id: 'daemon', fresh: 'daemon', outside: 'Daemon', answersOther: true, body: () => ({ snmp_public: false }),
    // The allowed call changes the approval of the place's subnet for a fresh daemon.
    afterFresh: async (id, app, w) => { expectOk(await call(app.url, 'POST', `/api/v1/daemons/${id}/targets`, { auth: w.owner.auth, body: { subnet_id: w.inside.subnet } })); },
  },
  'DELETE /api/v1/daemons/:id/targets/:subnet_id': {
    role: 'Admin', id: 'daemon', outside: 'Daemon',
    // The allowed call revokes the approval of the place's subnet for a fresh daemon.
    afterFresh: async (id, app, w) => { expectOk(await call(app.url, 'POST', `/api/v1/daemons/${id}/targets`, { auth: w.owner.auth, body: { subnet_id: w.inside.subnet } })); },
  },
  // What each scan changed (issue 39.4): read like the network's inventory, acknowledged by a Member.
  'GET /api/v1/changes': { role: 'Viewer', query: net, outside: 'Network', fresh: 'daemon', afterFresh: endedScan },
  'GET /api/v1/search': { role: 'Viewer', query: (p) => `?q=a&network_id=${p.network}`, outside: 'Network' },
  'POST /api/v1/changes/:session_id/acknowledge': { role: 'Member', fresh: 'daemon', afterFresh: endedScan, answersOther: true },
  // Alerts (issue 39.4): rules read like the network, written by Admins; digests read like the network, acknowledged by a Member.
  'GET /api/v1/alert_rules': { role: 'Viewer', query: net, outside: 'Network' },
  'POST /api/v1/alert_rules': { role: 'Admin', status: 201, creates: 'alertRule', body: (p) => ({ network_id: p.network, kind: 'host_new' }), outside: 'Network' },
  'GET /api/v1/alert_rules/:id': { role: 'Viewer', id: 'alertRule', outside: 'AlertRule' },
  'PUT /api/v1/alert_rules/:id': { role: 'Admin', id: 'alertRule', body: (p) => ({ network_id: p.network, kind: 'host_offline', offline_delay_minutes: 5 }), outside: 'AlertRule' },
  'DELETE /api/v1/alert_rules/:id': { role: 'Admin', id: 'alertRule', outside: 'AlertRule' },
  'GET /api/v1/alerts': { role: 'Viewer', query: net, outside: 'Network' },
  'GET /api/v1/alerts/:id': { role: 'Viewer', id: 'alert', outside: 'Alert' },
  'POST /api/v1/alerts/:id/acknowledge': { role: 'Member', id: 'alert', outside: 'Alert' },
  // Discovery schedules (issue 39.1): read like the daemon, written like its other settings.
  'GET /api/v1/daemons/:id/schedules': { role: 'Viewer', id: 'daemon', outside: 'Daemon', answersOther: true },
  'POST /api/v1/daemons/:id/schedules': { role: 'Admin', id: 'daemon', outside: 'Daemon', answersOther: true, status: 201, body: () => ({ every_minutes: 60 }) },
  'GET /api/v1/daemons/:id/schedules/:schedule_id': { role: 'Viewer', id: 'daemon', fresh: 'daemon', outside: 'Daemon', answersOther: true, afterFresh: makeSchedule },
  'PATCH /api/v1/daemons/:id/schedules/:schedule_id': {
    role: 'Admin', id: 'daemon', fresh: 'daemon', outside: 'Daemon', answersOther: true, afterFresh: makeSchedule, body: () => ({ enabled: false }),
  },
  'DELETE /api/v1/daemons/:id/schedules/:schedule_id': { role: 'Admin', id: 'daemon', fresh: 'daemon', outside: 'Daemon', answersOther: true, afterFresh: makeSchedule },

  // Daemon API keys: a signed-in Admin.
  'POST /api/v1/auth/daemon': { role: 'Admin', sessionOnly: true, status: 201, creates: 'daemonKey', body: (p) => ({ name: uniq('dkey'), network_id: p.network }) },
  'GET /api/v1/auth/daemon': { role: 'Admin', sessionOnly: true },
  'GET /api/v1/auth/daemon/:id': { role: 'Admin', sessionOnly: true, id: 'daemonKey' },
  'PUT /api/v1/auth/daemon/:id': { role: 'Admin', sessionOnly: true, id: 'daemonKey', body: () => ({ name: uniq('dkey') }) },
  'POST /api/v1/auth/daemon/:id/rotate': { role: 'Admin', sessionOnly: true, id: 'daemonKey', fresh: 'daemonKey' },
  'DELETE /api/v1/auth/daemon/:id': { role: 'Admin', sessionOnly: true, id: 'daemonKey' },
  'POST /api/v1/auth/daemon/bulk-delete': bulkDelete('/api/v1/auth/daemon', 'daemonKey', 'Admin', undefined, { sessionOnly: true }),
  'GET /api/v1/auth/daemon/export/csv': exportCsv(undefined, { role: 'Admin', sessionOnly: true }),

  // Topology: read like any list of the network.
  'GET /api/v1/topology': {
    role: 'Viewer', query: net, outside: 'Network',
    check: (data, { ids }) => {
      expect(data.network_id).to.equal(ids.network);
      expect(data.nodes.map((n: { id: string }) => n.id)).to.include(`ip_address:${ids.ipAddress}`);
    },
  },
  'GET /api/v1/topology/diff': { role: 'Viewer', outside: 'Network', query: (p) => `?network_id=${p.network}&from=${encodeURIComponent(new Date(Date.now() - 3600_000).toISOString())}` },
  'GET /api/v1/topology/timeline': { role: 'Viewer', outside: 'Network', query: (p) => `?network_id=${p.network}&from=${encodeURIComponent(new Date(Date.now() - 60_000).toISOString())}` },
  'GET /api/v1/topology/export': {
    role: 'Viewer', outside: 'Network', file: true, query: (p) => `?network_id=${p.network}&format=mermaid`,
    check: (text) => { expect(text).to.match(/^flowchart LR/).and.to.contain('host-1'); },
  },
  'PUT /api/v1/topology/positions': {
    role: 'Member', outside: 'Network', body: (p) => ({ network_id: p.network, view: 'l3', positions: { [`host:${p.host}`]: { x: 10, y: 20 } } }),
    check: (data, { ids }) => { expect(data.pinned).to.include(`host:${ids.host}`); },
  },
  'DELETE /api/v1/topology/positions': { role: 'Member', outside: 'Network', query: (p) => `?network_id=${p.network}&view=l3` },

  // Events: read like any list of the network; the stream answers Server-Sent Events.
  'GET /api/v1/events': { role: 'Viewer', query: net, outside: 'Network' },
  'GET /api/v1/events/stream': { role: 'Viewer', query: net, outside: 'Network', stream: true },

  // Webhooks: Admin, organization-wide.
  'POST /api/v1/webhooks': { role: 'Admin', organizationWide: true, status: 201, body: () => ({ name: uniq('hook'), url: 'https://example.com/hook' }) },
  'GET /api/v1/webhooks': { role: 'Admin', organizationWide: true },
  'GET /api/v1/webhooks/:id': { role: 'Admin', organizationWide: true, id: 'webhook' },
  'PUT /api/v1/webhooks/:id': { role: 'Admin', organizationWide: true, id: 'webhook', body: () => ({ name: uniq('hook'), url: 'https://example.com/hook' }) },
  'DELETE /api/v1/webhooks/:id': { role: 'Admin', organizationWide: true, id: 'webhook' },
  'POST /api/v1/webhooks/bulk-delete': bulkDelete('/api/v1/webhooks', 'webhook', 'Admin', undefined, { organizationWide: true }),
  'GET /api/v1/webhooks/export/csv': exportCsv(undefined, { role: 'Admin', organizationWide: true }),
  'GET /api/v1/service_definitions': { role: 'Viewer' },
  'POST /api/v1/service_definitions': { role: 'Admin', organizationWide: true, status: 201, creates: 'serviceDefinition', body: () => serviceDefinitionBody(uniq('definition')) },
  'GET /api/v1/service_definitions/:id': { role: 'Viewer', id: 'serviceDefinition' },
  'PUT /api/v1/service_definitions/:id': { role: 'Admin', organizationWide: true, id: 'serviceDefinition', body: () => serviceDefinitionBody(uniq('definition')) },
  'DELETE /api/v1/service_definitions/:id': { role: 'Admin', organizationWide: true, id: 'serviceDefinition' },
  'POST /api/v1/service_definitions/bulk-delete': bulkDelete('/api/v1/service_definitions', 'serviceDefinition', 'Admin', undefined, { organizationWide: true }),
  'GET /api/v1/service_definitions/export/csv': exportCsv(),
  'POST /api/v1/webhooks/:id/rotate-secret': { role: 'Admin', organizationWide: true, id: 'webhook', check: (data) => { expect(data.secret).to.match(/^whsec_/); } },
  'POST /api/v1/webhooks/:id/test': { role: 'Admin', organizationWide: true, id: 'webhook', status: 202 },
  'GET /api/v1/webhooks/:id/deliveries': { role: 'Admin', organizationWide: true, id: 'webhook', answersOther: true, check: (data) => { expect(data.length).to.be.greaterThan(0); } },
  'POST /api/v1/webhooks/:id/deliveries/:delivery_id/redeliver': { role: 'Admin', organizationWide: true, id: 'webhook', status: 202, answersOther: true },
  'POST /api/v1/webhooks/:id/redeliver': { role: 'Admin', organizationWide: true, id: 'webhook', status: 202, answersOther: true, body: () => ({ since: new Date(Date.now() - 3600_000).toISOString() }) },
};

/** The only routes that answer without a credential (decisions §2, §8). */
const PUBLIC_ROUTES = [
  'GET /api/version', 'GET /api/health', 'GET /api/ready',
  'POST /api/auth/register', 'POST /api/auth/login', 'POST /api/auth/logout',
  // The agent's builds: a machine being set up has no credentials, and the files hold none.
  'GET /api/v1/downloads', 'GET /downloads/:file',
  // A share link's read-only map: the token in the path is the credential (src/modules/shareLinks, test/shareLinks).
  'GET /api/share/:token/topology', 'GET /api/share/:token/stream',
];

/**
 * Approves a subnet for a daemon that has none: the id of the Network session that queues (none for a
 * server_poll daemon never reached yet: it gets its first scan at first contact).
 */
async function approveFirstTarget(daemonId: string, app: TestApp, w: World): Promise<string | undefined> {
  expectOk(await call(app.url, 'POST', `/api/v1/daemons/${daemonId}/targets`, { auth: w.owner.auth, body: { subnet_id: w.inside.subnet } }));
  const sessions = expectOk(await call(app.url, 'GET', `/api/v1/daemons/${daemonId}/sessions`, { auth: w.owner.auth })) as Array<{ id: string; phase: string; discovery_type: { type: string } }>;
  return sessions.find((x) => x.phase === 'Pending' && x.discovery_type.type === 'Network')?.id;
}

const routeKey = (r: RouteDef) => `${r.method.toUpperCase()} ${r.path}`;
/** The daemon protocol (auth 'daemon': a daemon key with X-Daemon-ID) is not for users; checked apart below. */
const daemonRoutes = routes.filter((r) => r.auth === 'daemon');
const protectedRoutes = routes.filter((r) => r.auth !== 'public' && r.auth !== 'daemon');
/** Routes by module: `/api/v1/tags/:id/history` → `/api/v1/tags`, `/api/auth/me` → `/api/auth/me`. */
const moduleOf = (r: RouteDef) => r.path.split('/').slice(0, 4).join('/');
const modules = [...new Set(protectedRoutes.map(moduleOf))];

/** Makes a fresh entity of a kind, on the shared network (by the Owner; an API key for `who`). */
async function makeFresh(kind: IdKind, app: TestApp, w: World, who: Person): Promise<string> {
  const p = w.inside;
  const post = async (path: string, body: unknown) => expectOk(await call(app.url, 'POST', path, { auth: w.owner.auth, body }), 201).id as string;
  switch (kind) {
    case 'tag': return post('/api/v1/tags', { name: uniq('tag'), color: 'Gray' });
    case 'network': return post('/api/v1/networks', { name: uniq('net') });
    case 'user': return post('/api/v1/users', { email: `${uniq('fresh')}@example.test`, password: PASSWORD, permissions: 'Viewer', network_ids: [] });
    case 'apiKey': return (await createKey(app.url, who.auth, { name: uniq('fresh') })).id;
    case 'subnet': return post('/api/v1/subnets', { cidr: freshCidr(), name: uniq('lan'), network_id: p.network });
    case 'host': return post('/api/v1/hosts', { name: uniq('host'), network_id: p.network });
    case 'ipAddress': return post('/api/v1/ip-addresses', { host_id: p.host, subnet_id: p.subnet, ip_address: ipIn(p) });
    case 'port': case 'freePort': return post('/api/v1/ports', { host_id: p.host, number: portNumber(), protocol: 'Tcp' });
    case 'service': return post('/api/v1/services', { host_id: p.host, name: uniq('svc'), service_definition: 'Nginx' });
    case 'binding': return post('/api/v1/bindings', { service_id: p.service, type: 'Port', port_id: await makeFresh('port', app, w, who) });
    case 'interface': return post('/api/v1/interfaces', { host_id: p.host, if_index: ifIndex() });
    case 'dependency': return post('/api/v1/dependencies', { name: uniq('dep'), network_id: p.network, color: 'Blue', members: { type: 'Services', service_ids: [p.service] } });
    case 'daemon': return expectOk(await call(app.url, 'POST', '/api/v1/daemons/provision', { auth: w.owner.auth, body: { name: uniq('daemon'), network_id: p.network, url: 'http://10.0.0.2:60073' } }), 201).daemon.id;
    case 'webhook': return post('/api/v1/webhooks', { name: uniq('hook'), url: 'https://example.com/hook' });
    case 'serviceDefinition': return post('/api/v1/service_definitions', serviceDefinitionBody(uniq('definition')));
    case 'alertRule': return post('/api/v1/alert_rules', { network_id: p.network, kind: 'host_new' });
    case 'alert': return makeAlert(app, p.network);
    case 'daemonKey': return expectOk(await call(app.url, 'POST', '/api/v1/auth/daemon', { auth: w.owner.auth, body: { name: uniq('dkey'), network_id: p.network } }), 201).api_key.id;
  }
}

interface Built {
  method: string;
  path: string;
  /** The id of A's that the request names (the path id, else the network of a `network_id` filter). */
  id?: string;
  body?: unknown;
  contentType?: string;
  ids: Ids;
}

/** A concrete request for `route`, as `who` would send it (an API key `:id` is `who`'s own key), aimed at `place`. */
function build(route: RouteDef, fx: Fixture, w: World, who: Person, place: Place = w.inside, over: Partial<Ids> = {}): Built {
  const ids: Ids = { ...place, tag: w.tagId, user: w.targetUserId, apiKey: who.key.id, webhook: w.webhookId, delivery: w.deliveryId, serviceDefinition: w.serviceDefinitionId, ...over };
  const id = fx.id ? ids[fx.id] : undefined;
  const path = route.path.replace(/:(\w+)/g, (_, param: string) => {
    if (param === 'delivery_id') return ids.delivery;
    if (param === 'subnet_id') return ids.subnet;
    if (param === 'session_id') return scanOf.get(ids.daemon) ?? randomUUID();
    if (param === 'schedule_id') return scheduleOf.get(ids.daemon) ?? randomUUID();
    if (param === 'share_link_id') return shareLinkOf.get(ids.network) ?? randomUUID();
    // Consolidation: the place's host absorbs `ids.host` (a fresh one for the allowed call).
    if (param === 'destination') return place.host;
    if (param === 'other') return ids.host;
    if (param !== 'id' || !id) throw new Error(`the fixture gives no value for :${param}`);
    return id;
  });
  return {
    method: route.method.toUpperCase(),
    path: path + (fx.query?.(ids) ?? ''),
    id: id ?? (fx.query ? ids.network : undefined),
    body: fx.body?.(ids),
    contentType: fx.contentType,
    ids,
  };
}

/** The request's body as JSON, or as text of its own media type. */
const bodyOf = (req: Built, headers?: Record<string, string>) => (req.contentType
  ? { rawBody: String(req.body), headers: { ...headers, 'Content-Type': req.contentType } }
  : { body: req.body, headers });
const send = (app: TestApp, req: Built, auth?: Credential, headers?: Record<string, string>) =>
  call(app.url, req.method, req.path, { auth, ...bodyOf(req, headers) });
/** Anonymous outcomes (401) are sent from a fresh client IP: see the header of this file. */
const sendFresh = (app: TestApp, req: Built, auth?: Credential, headers?: Record<string, string>) =>
  callFrom(freshLoopbackIp(), app.url, req.method, req.path, { auth, ...bodyOf(req, headers) });

function expectDenied(res: ApiResponse, required: string | undefined, what: string): void {
  expect(res.status, `${what}: ${JSON.stringify(res.body)}`).to.equal(403);
  expectError(res, 403, 'auth_permission_denied');
  if (required) expect(res.body.params, what).to.deep.include({ required });
}

/** Every check of the matrix for one route; throws on the first failure. */
async function checkRoute(app: TestApp, w: World, route: RouteDef): Promise<void> {
  const key = routeKey(route);
  const fx = FIXTURES[key];
  if (!fx) throw new Error(`no fixture in test/http/tenancy.spec.ts FIXTURES for the protected route ${key}`);
  const req = build(route, fx, w, w.owner);
  const sessionOf: Record<Role, Person> = { Owner: w.owner, Admin: w.admin, Member: w.member, Viewer: w.viewer };

  // 1. No usable credential: 401, whatever the route.
  // Each with its own code (issue 9.7): the fix differs for each.
  const unusable: Array<[string, Credential | undefined, Record<string, string> | undefined, string]> = [
    ['no credential', undefined, undefined, 'auth_not_authenticated'],
    ['a garbage Bearer token', { bearer: 'garbage' }, undefined, 'auth_key_unknown'],
    ['an unknown scheme', undefined, { Authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }, 'auth_header_malformed'],
    ['a well-formed unknown key', { bearer: `scp_u_${base62(32)}` }, undefined, 'auth_key_unknown'],
    ['a disabled key', { bearer: w.disabledKey }, undefined, 'auth_key_revoked'],
    ['an expired key', { bearer: w.expiredKey }, undefined, 'auth_key_expired'],
    ['a garbage Bearer beside a valid session cookie (Bearer wins)', { cookie: w.owner.auth.cookie, bearer: 'scp_u_short' }, undefined, 'auth_key_unknown'],
    ['a session cookie that is no session', { cookie: 'session_id=forged' }, undefined, 'auth_session_expired'],
  ];
  for (const [what, auth, headers, code] of unusable) {
    const res = await sendFresh(app, req, auth, headers);
    expect(res.status, `with ${what}: ${JSON.stringify(res.body)}`).to.equal(401);
    expectError(res, 401, code);
    if (code === 'auth_header_malformed') expect(res.body.error).to.contain('`Authorization: Bearer <key>`');
    if (code === 'auth_key_expired') expect(res.body.params).to.have.property('expired_at').that.is.a('string');
  }

  // 1b. Organization-wide routes refuse a key limited to some networks, even the Owner's (issue 10.1).
  if (fx.organizationWide && !fx.sessionOnly) {
    const res = await send(app, req, { bearer: w.scopedKey });
    expect(res.status, `with a network-limited key: ${JSON.stringify(res.body)}`).to.equal(403);
    expectError(res, 403, 'auth_key_network_scoped');
  }
  expect(route.auth !== 'public' && route.auth !== 'daemon' && route.organizationWide === true, 'declared organization-wide').to.equal(fx.organizationWide === true);

  // 2. Session-only routes refuse every API key, even the Owner's full key.
  if (fx.sessionOnly) expectDenied(await send(app, req, { bearer: w.owner.key.key }), undefined, 'with an Owner API key');

  // 3. Roles below the route's: 403 auth_permission_denied, for sessions and role-limited keys.
  for (const role of ROLES.filter((r) => RANK[r] < RANK[fx.role])) {
    const who = sessionOf[role];
    const own = build(route, fx, w, who);
    expectDenied(await send(app, own, who.auth), fx.role, `as a ${role} session`);
    if (!fx.sessionOnly) {
      expectDenied(await send(app, req, { bearer: w.roleKeys[role as 'Viewer' | 'Member' | 'Admin'] }), fx.role, `with a ${role}-role key of the Owner`);
      expectDenied(await send(app, own, { bearer: who.key.key }), fx.role, `with the ${role}'s own key`);
    }
  }

  // 4. Another organization: the id (or the network of a network_id filter) does not exist for it (404, never 403).
  if (req.id) {
    const foreign: Array<[string, Credential]> = [['session', w.bOwner.auth]];
    if (!fx.sessionOnly) foreign.push(['API key', { bearer: w.bOwner.key.key }]);
    for (const [what, auth] of foreign) {
      const res = await send(app, req, auth);
      expect(res.status, `by another organization's Owner (${what}): ${JSON.stringify(res.body)}`).to.equal(404);
      expectError(res, 404, 'entity_not_found');
      expect(res.body.params.id).to.equal(req.id);
    }
  }

  // 5. A network of the organization outside the caller's (or the key's) networks: 403 entity_access_denied.
  if (fx.outside) {
    const outside = build(route, fx, w, w.owner, w.outside);
    const entityId: Record<Entity, string> = {
      Network: outside.ids.network, Subnet: outside.ids.subnet, Host: outside.ids.host, IPAddress: outside.ids.ipAddress, Port: outside.ids.port,
      Service: outside.ids.service, Binding: outside.ids.binding, Interface: outside.ids.interface, Dependency: outside.ids.dependency,
      Daemon: outside.ids.daemon, AlertRule: outside.ids.alertRule, Alert: outside.ids.alert,
    };
    const callers: Array<[string, Credential]> = [];
    for (const role of ['Member', 'Viewer'] as const) if (RANK[role] >= RANK[fx.role]) callers.push([`${role} without a grant`, sessionOf[role].auth]);
    if (!fx.sessionOnly && !fx.organizationWide) callers.push(['Owner key scoped to another network', { bearer: w.scopedKey }]);
    for (const [what, auth] of callers) {
      const res = await send(app, outside, auth);
      expect(res.status, `aimed at a network outside the scope, as ${what}: ${JSON.stringify(res.body)}`).to.equal(403);
      expectError(res, 403, 'entity_access_denied');
      expect(res.body.params, `aimed at a network outside the scope, as ${what}`).to.deep.include({ entity: fx.outside, id: entityId[fx.outside] });
    }
  }

  // 6. The lowest allowed role succeeds with the same request (so the refusals above are about the
  //    caller, not the request). A destructive call runs on a fresh entity, so the world stays whole.
  const who = sessionOf[fx.role];
  const freshKind = fx.fresh ?? (route.method === 'delete' ? fx.id : undefined);
  const over: Partial<Ids> = freshKind ? { [freshKind]: await makeFresh(freshKind, app, w, who) } : {};
  if (freshKind && fx.afterFresh) await fx.afterFresh(over[freshKind]!, app, w);
  for (const kind of fx.freshInBody ?? []) over[kind] = await makeFresh(kind, app, w, who);
  const own = build(route, fx, w, who, w.inside, over);
  if (fx.stream) {
    const controller = new AbortController();
    const res = await fetch(`${app.url}${own.path}`, { headers: { Cookie: who.auth.cookie ?? '' }, signal: controller.signal });
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/event-stream/);
    controller.abort();
    return;
  }
  const answer = await send(app, own, who.auth);
  if (fx.file) {
    // A file, not an envelope (exports).
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    expect(answer.headers.get('content-disposition')).to.match(/^attachment; filename=/);
    await fx.check?.(answer.body, { app, w, who, ids: own.ids });
    return;
  }
  const data = expectOk(answer, fx.status ?? 200);
  if (fx.id && route.method !== 'delete' && !fx.answersOther) {
    const items = Array.isArray(data) ? data : [data.api_key ?? data];
    expect(items, 'answers the entity it names').to.not.be.empty;
    for (const item of items) expect(item.id, 'answers the entity it names').to.equal(own.id);
  }
  if (fx.query && route.paginated) {
    expect(data, "lists the filtered network's entities").to.be.an('array').that.is.not.empty;
    for (const item of data) expect(item.network_id, 'filters by network').to.equal(w.inside.network);
  }
  await fx.check?.(data, { app, w, who, ids: own.ids });
  if (route.method === 'delete' && routes.some((r) => r.method === 'get' && r.path === route.path)) {
    expectError(await call(app.url, 'GET', own.path, { auth: who.auth }), 404, 'entity_not_found');
  }
}

describe('http/tenancy: credentials, roles and organizations on every route', () => {
  let app: TestApp;
  beforeEach(async () => {
    app = await startTestApp();
  });
  afterEach(() => app.close());

  it('every protected route has a fixture, every fixture is a route, and only the known routes are public', () => {
    const missing = protectedRoutes.map(routeKey).filter((k) => !FIXTURES[k]);
    expect(missing, 'protected routes without a fixture in test/http/tenancy.spec.ts').to.deep.equal([]);
    const stale = Object.keys(FIXTURES).filter((k) => !protectedRoutes.some((r) => routeKey(r) === k));
    expect(stale, 'fixtures naming no protected route').to.deep.equal([]);
    expect(routes.filter((r) => r.auth === 'public').map(routeKey)).to.have.members(PUBLIC_ROUTES);
  });

  it('a bulk delete is called by whoever may delete one, a bulk create by whoever may create one, an export by whoever may list (role, session only, organization-wide)', () => {
    const access = (r: RouteDef | undefined) => r && r.auth !== 'public' && r.auth !== 'daemon'
      ? { auth: r.auth, sessionOnly: r.sessionOnly === true, organizationWide: r.organizationWide === true } : r;
    const find = (method: string, path: string) => routes.find((r) => r.method === method && r.path === path);
    const extra = routes.filter((r) => /\/(bulk-delete|export\/csv|bulk)$/.test(r.path));
    expect(extra.length).to.be.greaterThan(20);
    expect(extra.filter((r) => r.path.endsWith('/bulk')).map((r) => r.path)).to.have.members(['/api/v1/hosts/bulk', '/api/v1/subnets/bulk', '/api/v1/tags/bulk', '/api/v1/dependencies/bulk']);
    for (const route of extra) {
      const base = route.path.replace(/\/(bulk-delete|export\/csv|bulk)$/, '');
      const own = route.path.endsWith('/bulk-delete') ? find('delete', `${base}/:id`) : route.path.endsWith('/bulk') ? find('post', base) : find('get', base);
      expect(access(route), routeKey(route)).to.deep.equal(access(own));
    }
  });

  it('daemon protocol routes: 401 without a credential, 403 auth_daemon_required for users (sessions and keys)', async () => {
    expect(daemonRoutes.length).to.be.greaterThan(0);
    const w = await buildWorld(app);
    for (const route of daemonRoutes) {
      const path = route.path.replace(/:(\w+)/g, () => randomUUID());
      const what = routeKey(route);
      expectError(await callFrom(freshLoopbackIp(), app.url, route.method.toUpperCase(), path, { body: route.method === 'get' ? undefined : {} }), 401, 'auth_not_authenticated');
      for (const auth of [w.owner.auth, { bearer: w.owner.key.key }]) {
        const res = await call(app.url, route.method.toUpperCase(), path, { auth, body: route.method === 'get' ? undefined : {} });
        expect(res.status, `${what}: ${JSON.stringify(res.body)}`).to.equal(403);
        expectError(res, 403, 'auth_daemon_required');
      }
    }
  });

  describe('route matrix: 401 without a usable credential, 403 below the role or for a key on a session route, 404 across organizations, 403 outside the networks, and the allowed call', () => {
    let w: World;
    beforeEach(async () => {
      w = await buildWorld(app);
    });

    for (const mod of modules) {
      const group = protectedRoutes.filter((r) => moduleOf(r) === mod);
      it(`${mod}: ${group.map((r) => `${r.method.toUpperCase()} ${r.path.slice(mod.length) || '/'}`).join(', ')}`, async () => {
        const failures: string[] = [];
        for (const route of group) {
          try {
            await checkRoute(app, w, route);
          } catch (err) {
            failures.push(`${routeKey(route)}: ${(err as Error).message}`);
          }
        }
        if (failures.length) expect.fail(`${failures.length} of ${group.length} routes failed:\n${failures.join('\n')}`);
      });
    }

    it('lists of another organization show none of this one’s entities', async () => {
      const aIds = new Set([
        w.tagId, w.sharedNet, w.privateNet, w.owner.id, w.admin.id, w.member.id, w.viewer.id, w.targetUserId,
        w.owner.key.id, w.admin.key.id, w.member.key.id, w.viewer.key.id, ...Object.values(w.inside), ...Object.values(w.outside), w.serviceDefinitionId,
      ]);
      const lists = protectedRoutes.filter((r) => r.method === 'get' && r.paginated && !r.path.includes(':'));
      expect(lists.map((r) => r.path)).to.include.members(['/api/v1/tags', '/api/v1/networks', '/api/v1/users', '/api/v1/hosts']);
      for (const route of lists) {
        const items = expectOk(await call(app.url, 'GET', `${route.path}?limit=0`, { auth: w.bOwner.auth })) as Array<{ id: string; organization_id?: string }>;
        expect(items.length, `${route.path} of organization B is empty: give B an entity of that kind in buildWorld`).to.be.greaterThan(0);
        for (const item of items) {
          expect(aIds.has(item.id), `${route.path} of organization B shows ${item.id} of A`).to.equal(false);
          if ('organization_id' in item) expect(item.organization_id, route.path).to.equal(w.b.orgId);
        }
      }
    });

    it('a bulk delete naming another organization’s entity deletes nothing: 404 as for an unknown id', async () => {
      const own = expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: w.bOwner.auth, body: { name: 'b-host', network_id: w.b.defaultNetworkId } }), 201);
      for (const body of [[own.id, w.inside.host], { ids: [own.id, w.outside.host] }]) {
        const res = await call(app.url, 'POST', '/api/v1/hosts/bulk-delete', { auth: w.bOwner.auth, body });
        expectError(res, 404, 'entity_not_found');
        expect(res.body.params.id).to.be.oneOf([w.inside.host, w.outside.host]);
      }
      for (const id of [w.inside.host, w.outside.host]) expectOk(await call(app.url, 'GET', `/api/v1/hosts/${id}`, { auth: w.owner.auth }));
      expectOk(await call(app.url, 'GET', `/api/v1/hosts/${own.id}`, { auth: w.bOwner.auth }));
      const tag = expectOk(await call(app.url, 'POST', '/api/v1/tags', { auth: w.bOwner.auth, body: { name: 'b-tag', color: 'Blue' } }), 201);
      expectError(await call(app.url, 'POST', '/api/v1/tags/bulk-delete', { auth: w.bOwner.auth, body: { ids: [tag.id, w.tagId] } }), 404, 'entity_not_found');
      expectOk(await call(app.url, 'GET', `/api/v1/tags/${tag.id}`, { auth: w.bOwner.auth }));
    });

    // Creates ignore (or refuse alike) a body `id`: a taken one, even another organization's, must
    // answer exactly as a free one, never 500 and never a hint that it exists (decisions §1).
    it('a create carrying another organization’s id in the body answers as for a free id (never 500, never a hint)', async () => {
      const bIds: Ids = { ...w.bPlace, tag: w.bTagId, user: w.bOwner.id, apiKey: w.bOwner.key.id, webhook: '', delivery: '', serviceDefinition: w.bServiceDefinitionId };
      const creates = protectedRoutes.filter((r) => FIXTURES[routeKey(r)]?.creates);
      expect(creates.length).to.be.greaterThan(10);
      const outcomes: Array<{ route: string; free: number; taken: number; code?: string }> = [];
      for (const route of creates) {
        const fx = FIXTURES[routeKey(route)]!;
        const caller = w.owner; // the Owner may create anything
        const attempt = async (id: string) => {
          const over: Partial<Ids> = {};
          for (const kind of fx.freshInBody ?? []) over[kind] = await makeFresh(kind, app, w, caller);
          const req = build(route, fx, w, caller, w.inside, over);
          return send(app, { ...req, body: { ...(req.body as object), id } }, caller.auth);
        };
        const free = await attempt(randomUUID());
        const taken = await attempt(bIds[fx.creates!]);
        outcomes.push({ route: routeKey(route), free: free.status, taken: taken.status, code: taken.body.code });
        if (taken.status === 201) expect((taken.body.data.api_key ?? taken.body.data).organization_id).to.equal(w.a.orgId);
      }
      // B's entities are untouched.
      const untouched = [['/api/v1/hosts', 'host'], ['/api/v1/subnets', 'subnet'], ['/api/v1/services', 'service'], ['/api/v1/dependencies', 'dependency']] as const;
      for (const [path, kind] of untouched) {
        expect(expectOk(await call(app.url, 'GET', `${path}/${w.bPlace[kind]}`, { auth: w.bOwner.auth })).organization_id).to.equal(w.b.orgId);
      }
      const differing = outcomes.filter((o) => o.taken !== o.free || o.taken >= 500);
      expect(differing, 'creates whose answer tells that the other organization’s id exists').to.deep.equal([]);
    });
  });

  describe('network-level access', () => {
    let w: World;
    beforeEach(async () => {
      w = await buildWorld(app);
    });

    it('a Member or Viewer without a grant is refused a network of the organization (403), and lists show only the granted ones', async () => {
      for (const p of [w.member, w.viewer]) {
        const res = await call(app.url, 'GET', `/api/v1/networks/${w.privateNet}`, { auth: p.auth });
        expectError(res, 403, 'entity_access_denied');
        expect(res.body.params).to.deep.equal({ entity: 'Network', id: w.privateNet });
        expect(expectOk(await call(app.url, 'GET', `/api/v1/networks/${w.sharedNet}`, { auth: p.auth })).id).to.equal(w.sharedNet);
        const list = await call(app.url, 'GET', '/api/v1/networks', { auth: p.auth });
        expect(expectOk(list).map((n: { id: string }) => n.id)).to.deep.equal([w.sharedNet]);
        expect(list.body.meta.pagination.total_count).to.equal(1);
      }
      // Owner and Admin see every network of the organization.
      for (const p of [w.owner, w.admin]) {
        const ids = expectOk(await call(app.url, 'GET', '/api/v1/networks', { auth: p.auth })).map((n: { id: string }) => n.id);
        expect(ids).to.have.members([w.sharedNet, w.privateNet]);
      }
    });

    it('an API key scoped to one network is refused the others (403) and lists only its own', async () => {
      const res = await call(app.url, 'GET', `/api/v1/networks/${w.privateNet}`, { auth: { bearer: w.scopedKey } });
      expectError(res, 403, 'entity_access_denied');
      expect(res.body.params).to.deep.equal({ entity: 'Network', id: w.privateNet });
      const list = await call(app.url, 'GET', '/api/v1/networks', { auth: { bearer: w.scopedKey } });
      expect(expectOk(list).map((n: { id: string }) => n.id)).to.deep.equal([w.sharedNet]);
      expect(list.body.meta.pagination.total_count).to.equal(1);
      // The same Owner's unscoped key sees both.
      const all = expectOk(await call(app.url, 'GET', '/api/v1/networks', { auth: { bearer: w.owner.key.key } }));
      expect(all.map((n: { id: string }) => n.id)).to.have.members([w.sharedNet, w.privateNet]);
    });

    it('a key sees the intersection of its networks with what its user sees now', async () => {
      // The Member's own key (network_ids null) sees only the Member's grant.
      const list = expectOk(await call(app.url, 'GET', '/api/v1/networks', { auth: { bearer: w.member.key.key } }));
      expect(list.map((n: { id: string }) => n.id)).to.deep.equal([w.sharedNet]);
      // Grant the private network to the Member: a key scoped to the shared one still does not see it.
      expectOk(await call(app.url, 'PUT', `/api/v1/users/${w.member.id}`, {
        auth: w.owner.auth, body: { permissions: 'Member', network_ids: [w.sharedNet, w.privateNet] },
      }));
      const scoped = await createKey(app.url, w.member.auth, { name: 'member-scoped', network_ids: [w.sharedNet] });
      expectError(await call(app.url, 'GET', `/api/v1/networks/${w.privateNet}`, { auth: { bearer: scoped.key } }), 403, 'entity_access_denied');
      expectOk(await call(app.url, 'GET', `/api/v1/networks/${w.privateNet}`, { auth: { bearer: w.member.key.key } }));
      // Revoke the Member's grants: even the scoped key loses the shared network.
      expectOk(await call(app.url, 'PUT', `/api/v1/users/${w.member.id}`, { auth: w.owner.auth, body: { permissions: 'Member', network_ids: [] } }));
      expectError(await call(app.url, 'GET', `/api/v1/networks/${w.sharedNet}`, { auth: { bearer: scoped.key } }), 403, 'entity_access_denied');
      expect(expectOk(await call(app.url, 'GET', '/api/v1/networks', { auth: { bearer: scoped.key } }))).to.deep.equal([]);
    });
  });

  describe('organization API access', () => {
    let w: World;
    beforeEach(async () => {
      w = await buildWorld(app);
    });

    it('turned off by the Owner, keys get 403 auth_api_access_disabled while sessions work; back on, keys work again', async () => {
      const keys = [w.owner.key.key, w.viewer.key.key, w.scopedKey];
      for (const k of keys) expectOk(await call(app.url, 'GET', '/api/v1/tags', { auth: { bearer: k } }));

      const off = expectOk(await call(app.url, 'PUT', '/api/v1/organizations/current', { auth: w.owner.auth, body: { name: 'Org alpha', api_access_enabled: false } }));
      expect(off.api_access_enabled).to.equal(false);
      expect(expectOk(await call(app.url, 'GET', '/api/v1/organizations/current', { auth: w.viewer.auth })).api_access_enabled).to.equal(false);

      // A refused key is no principal, but its requests spend its user's tokens, not the client IP's
      // (10 for anonymous callers): a script keeps being told 403, not 429.
      for (const k of keys) {
        for (const path of ['/api/v1/tags', '/api/auth/me', `/api/v1/networks/${w.sharedNet}`]) {
          const res = await call(app.url, 'GET', path, { auth: { bearer: k } });
          expectError(res, 403, 'auth_api_access_disabled');
          expect(res.headers.get('x-ratelimit-limit')).to.equal('300');
        }
      }
      const ip = freshLoopbackIp();
      for (let n = 0; n < 12; n += 1) expectError(await callFrom(ip, app.url, 'GET', '/api/v1/tags', { auth: { bearer: keys[0]! } }), 403, 'auth_api_access_disabled');
      // A disabled or unknown key is still 401, not a hint that the organization exists.
      expectError(await callFrom(freshLoopbackIp(), app.url, 'GET', '/api/v1/tags', { auth: { bearer: w.disabledKey } }), 401, 'auth_key_revoked');
      // Sessions are unaffected, and so is the other organization's key.
      expectOk(await call(app.url, 'GET', '/api/v1/tags', { auth: w.viewer.auth }));
      expectOk(await call(app.url, 'GET', '/api/v1/tags', { auth: w.owner.auth }));
      expectOk(await call(app.url, 'GET', '/api/v1/tags', { auth: { bearer: w.bOwner.key.key } }));

      const on = expectOk(await call(app.url, 'PUT', '/api/v1/organizations/current', { auth: w.owner.auth, body: { name: 'Org alpha', api_access_enabled: true } }));
      expect(on.api_access_enabled).to.equal(true);
      for (const k of keys) expectOk(await call(app.url, 'GET', '/api/v1/tags', { auth: { bearer: k } }));
    });
  });

  describe('API key management', () => {
    let t: Tenant;
    beforeEach(async () => {
      t = await registerTenant(app.url, 'keys');
    });

    const allKeyRows = async () => (await app.services.orm.em.fork().execute('select * from user_api_keys')) as Array<Record<string, unknown>>;

    it('shows the plaintext only in the create response; GET and list never do; the table holds only its SHA-256', async () => {
      const created = await call(app.url, 'POST', '/api/v1/auth/keys', { auth: t.owner, body: { name: 'ci' } });
      const data = expectOk(created, 201);
      const plaintext: string = data.key;
      expect(plaintext).to.match(KEY_FORMAT);
      expect(data.api_key).to.include({ name: 'ci', permissions: 'Owner', is_enabled: true, user_id: t.ownerId, organization_id: t.orgId });
      expect(data.api_key).to.not.have.property('key');
      expect(JSON.stringify(data.api_key)).to.not.include(plaintext.slice(6));

      const hash = sha256Hex(plaintext);
      const got = await call(app.url, 'GET', `/api/v1/auth/keys/${data.api_key.id}`, { auth: t.owner });
      expect(expectOk(got).id).to.equal(data.api_key.id);
      const list = await call(app.url, 'GET', '/api/v1/auth/keys', { auth: t.owner });
      expect(expectOk(list).map((k: { id: string }) => k.id)).to.deep.equal([data.api_key.id]);
      for (const res of [got, list]) {
        const text = JSON.stringify(res.body);
        expect(text).to.not.include(plaintext.slice(6));
        expect(text).to.not.include(hash);
      }

      const rows = await allKeyRows();
      expect(rows).to.have.length(1);
      expect(rows[0]!.key_hash).to.equal(hash);
      for (const [column, value] of Object.entries(rows[0]!)) {
        expect(JSON.stringify(value) ?? '', `column ${column}`).to.not.include(plaintext.slice(6));
      }
      // and the plaintext works
      expect(expectOk(await call(app.url, 'GET', '/api/auth/me', { auth: { bearer: plaintext } })).id).to.equal(t.ownerId);
    });

    it('rotation shows a new plaintext once; the old one stops working (401), the new one works', async () => {
      const old = await createKey(app.url, t.owner, { name: 'rotating' });
      expectOk(await call(app.url, 'GET', '/api/auth/me', { auth: { bearer: old.key } }));
      const rotated = expectOk(await call(app.url, 'POST', `/api/v1/auth/keys/${old.id}/rotate`, { auth: t.owner }));
      expect(rotated.key).to.match(KEY_FORMAT);
      expect(rotated.key).to.not.equal(old.key);
      expect(rotated.api_key.id).to.equal(old.id);
      expect(rotated.api_key).to.not.have.property('key');

      expectError(await callFrom(freshLoopbackIp(), app.url, 'GET', '/api/auth/me', { auth: { bearer: old.key } }), 401, 'auth_key_unknown');
      expect(expectOk(await call(app.url, 'GET', '/api/auth/me', { auth: { bearer: rotated.key } })).id).to.equal(t.ownerId);

      const rows = await allKeyRows();
      expect(rows.map((r) => r.key_hash)).to.deep.equal([sha256Hex(rotated.key)]);
      const text = JSON.stringify(await call(app.url, 'GET', `/api/v1/auth/keys/${old.id}`, { auth: t.owner }));
      expect(text).to.not.include(rotated.key.slice(6));
    });

    it('another user’s key is 404 for every key route, and stays usable', async () => {
      const mine = await createKey(app.url, t.owner, { name: 'owners' });
      const admin = await createUser(app.url, t.owner, 'Admin');
      const attempts: Array<[string, string, unknown]> = [
        ['GET', `/api/v1/auth/keys/${mine.id}`, undefined],
        ['PUT', `/api/v1/auth/keys/${mine.id}`, { name: 'stolen', is_enabled: false }],
        ['POST', `/api/v1/auth/keys/${mine.id}/rotate`, undefined],
        ['DELETE', `/api/v1/auth/keys/${mine.id}`, undefined],
      ];
      for (const [method, path, body] of attempts) {
        const res = await call(app.url, method, path, { auth: admin.auth, body });
        expectError(res, 404, 'entity_not_found');
        expect(res.body.params.id).to.equal(mine.id);
      }
      expect(expectOk(await call(app.url, 'GET', '/api/v1/auth/keys', { auth: admin.auth }))).to.deep.equal([]);
      expect(expectOk(await call(app.url, 'GET', '/api/auth/me', { auth: { bearer: mine.key } })).id).to.equal(t.ownerId);
      expect(expectOk(await call(app.url, 'GET', `/api/v1/auth/keys/${mine.id}`, { auth: t.owner })).name).to.equal('owners');
    });

    it('records last_used_at after a use (once the usage recorder is flushed)', async () => {
      const k = await createKey(app.url, t.owner, { name: 'usage' });
      expect(expectOk(await call(app.url, 'GET', `/api/v1/auth/keys/${k.id}`, { auth: t.owner })).last_used_at).to.equal(null);
      const before = Date.now();
      expectOk(await call(app.url, 'GET', '/api/v1/tags?limit=1', { auth: { bearer: k.key } }));
      const after = Date.now();
      await app.services.keyUsage.flush();
      const used = expectOk(await call(app.url, 'GET', `/api/v1/auth/keys/${k.id}`, { auth: t.owner })).last_used_at;
      expect(used).to.be.a('string');
      const at = Date.parse(used);
      expect(at).to.be.within(before - 1000, after + 1000);
    });

    it('a disabled key is 401 until re-enabled; a revoked key is 401 for good', async () => {
      const k = await createKey(app.url, t.owner, { name: 'toggle' });
      expectOk(await call(app.url, 'PUT', `/api/v1/auth/keys/${k.id}`, { auth: t.owner, body: { name: 'toggle', is_enabled: false } }));
      expectError(await callFrom(freshLoopbackIp(), app.url, 'GET', '/api/auth/me', { auth: { bearer: k.key } }), 401, 'auth_key_revoked');
      expectOk(await call(app.url, 'PUT', `/api/v1/auth/keys/${k.id}`, { auth: t.owner, body: { name: 'toggle', is_enabled: true } }));
      expectOk(await call(app.url, 'GET', '/api/auth/me', { auth: { bearer: k.key } }));
      expectOk(await call(app.url, 'DELETE', `/api/v1/auth/keys/${k.id}`, { auth: t.owner }));
      expectError(await callFrom(freshLoopbackIp(), app.url, 'GET', '/api/auth/me', { auth: { bearer: k.key } }), 401, 'auth_key_unknown');
    });

    it('a key never exceeds its creator: no higher role (403), no network the creator cannot see (403 entity_access_denied)', async () => {
      const privateNet = await createNetwork(app.url, t.owner, 'Private');
      const member = await createUser(app.url, t.owner, 'Member', [t.defaultNetworkId]);

      for (const higher of ['Admin', 'Owner']) {
        const res = await call(app.url, 'POST', '/api/v1/auth/keys', { auth: member.auth, body: { name: 'up', permissions: higher } });
        expectError(res, 403, 'auth_permission_denied');
      }
      const res = await call(app.url, 'POST', '/api/v1/auth/keys', { auth: member.auth, body: { name: 'wide', network_ids: [privateNet] } });
      expectError(res, 403, 'entity_access_denied');
      expect(res.body.params).to.deep.equal({ entity: 'Network', id: privateNet });
      expect(expectOk(await call(app.url, 'GET', '/api/v1/auth/keys', { auth: member.auth }))).to.deep.equal([]);

      // Within the creator's reach it works, defaults to the creator's role, and cannot be widened by an update.
      const ok = expectOk(await call(app.url, 'POST', '/api/v1/auth/keys', { auth: member.auth, body: { name: 'fine', network_ids: [t.defaultNetworkId] } }), 201);
      expect(ok.api_key).to.include({ permissions: 'Member' });
      expect(ok.api_key.network_ids).to.deep.equal([t.defaultNetworkId]);
      expectError(await call(app.url, 'PUT', `/api/v1/auth/keys/${ok.api_key.id}`, { auth: member.auth, body: { name: 'fine', permissions: 'Admin' } }), 403, 'auth_permission_denied');
      expectError(await call(app.url, 'PUT', `/api/v1/auth/keys/${ok.api_key.id}`, { auth: member.auth, body: { name: 'fine', network_ids: [privateNet] } }), 403, 'entity_access_denied');
      const after = expectOk(await call(app.url, 'GET', `/api/v1/auth/keys/${ok.api_key.id}`, { auth: member.auth }));
      expect(after).to.include({ permissions: 'Member' });
      expect(after.network_ids).to.deep.equal([t.defaultNetworkId]);
      // The key cannot create networks (Admin) even though nothing else stops it.
      expectError(await call(app.url, 'POST', '/api/v1/networks', { auth: { bearer: ok.key }, body: { name: 'nope' } }), 403, 'auth_permission_denied');
    });
  });

  describe('login, logout, me, register', () => {
    let t: Tenant;
    let email: string;
    beforeEach(async () => {
      t = await registerTenant(app.url, 'login');
      email = expectOk(await call(app.url, 'GET', '/api/auth/me', { auth: t.owner })).email;
    });

    /** Every login attempt from its own client IP, so the anonymous rate limit never interferes. */
    const attempt = (e: string, password: string) =>
      callFrom(freshLoopbackIp(), app.url, 'POST', '/api/auth/login', { body: { email: e, password } });

    it('a wrong password or an unknown email is 401 auth_invalid_credentials and sets no cookie', async () => {
      for (const res of [await attempt(email, 'wrong-password-123'), await attempt('nobody-here@example.test', PASSWORD)]) {
        expectError(res, 401, 'auth_invalid_credentials');
        expect(res.headers.get('set-cookie')).to.equal(null);
      }
    });

    it('a successful login sets an HttpOnly, SameSite=Lax session_id cookie', async () => {
      const res = await attempt(email, PASSWORD);
      expect(expectOk(res).id).to.equal(t.ownerId);
      const cookie = res.headers.get('set-cookie') ?? '';
      expect(cookie).to.match(/^session_id=[^;]+/);
      expect(cookie.toLowerCase()).to.include('httponly').and.include('samesite=lax');
    });

    it('logout deletes the session: its cookie is then 401, another session of the user still works', async () => {
      const second = await login(app.url, email);
      expectOk(await call(app.url, 'GET', '/api/auth/me', { auth: second }));
      expectOk(await call(app.url, 'POST', '/api/auth/logout', { auth: second }));
      expectError(await callFrom(freshLoopbackIp(), app.url, 'GET', '/api/auth/me', { auth: second }), 401, 'auth_session_expired');
      expectError(await callFrom(freshLoopbackIp(), app.url, 'GET', '/api/v1/tags', { auth: second }), 401, 'auth_session_expired');
      expect(expectOk(await call(app.url, 'GET', '/api/auth/me', { auth: t.owner })).id).to.equal(t.ownerId);
    });

    it('GET and POST /api/auth/me return the signed-in user, without secrets', async () => {
      for (const method of ['GET', 'POST']) {
        const me = expectOk(await call(app.url, method, '/api/auth/me', { auth: t.owner }));
        expect(me).to.include({ id: t.ownerId, email, organization_id: t.orgId, permissions: 'Owner' });
        expect(me.network_ids).to.deep.equal([t.defaultNetworkId]);
        expect(me).to.not.have.any.keys('password', 'password_hash');
      }
    });

    it('register refuses a password under 10 characters (400) and a taken email (409, whatever its case)', async () => {
      const fresh = `${uniq('reg')}@example.test`;
      const short = await callFrom(freshLoopbackIp(), app.url, 'POST', '/api/auth/register', { body: { email: fresh, password: '123456789', organization_name: 'Short' } });
      expectError(short, 400, 'validation_failed');
      expect(short.body.params.field).to.equal('password');
      // nothing was created: the email is still free, and 10 characters are enough
      expectOk(await callFrom(freshLoopbackIp(), app.url, 'POST', '/api/auth/register', { body: { email: fresh, password: 'Plum-Harb7!', organization_name: 'Ten' } }), 201);

      for (const dup of [email, email.toUpperCase()]) {
        const res = await callFrom(freshLoopbackIp(), app.url, 'POST', '/api/auth/register', { body: { email: dup, password: PASSWORD, organization_name: 'Dup' } });
        expectError(res, 409, 'entity_already_exists');
        expect(res.body.params).to.include({ entity: 'User', field: 'email' });
      }
    });
  });
});
