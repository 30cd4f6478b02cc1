// Issue 27.3: on the partitioned schema (SCHEMA_VARIANT=partitioned), every statement a request makes
// on a tenant table reads one partition: the single-node stand-in for a Citus router (single-shard)
// query. The statements are the ones the API really sends (Db.query is recorded during each
// request); each is run first under EXPLAIN ANALYZE with its own parameters, in a savepoint (or a
// transaction) rolled back, and the partitions its plan executed are counted per table (a partition pruned at run time,
// e.g. by a correlated organization_id, is never executed). Skipped on the plain schema.
import { expect } from 'chai';
import { Db } from '../../src/core/db.js';
import { call, expectOk } from '../support/client.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { createUser, registerTenant, type Tenant } from '../support/world.js';
import { tableClasses } from '../support/tenantSchema.js';
import { createHostWithChildren, createSubnet } from '../hosts/fixtures.js';
import { createDaemonKey, daemonClient, registerDaemon, type DaemonClient } from '../daemons/world.js';
import { hostReport, postHost, postSubnet } from '../discovery/reports.js';
import { ACROSS_ORGANIZATIONS } from '../../src/core/db.js';
import { readRecording } from '../support/fixtures.js';
import { db as dbOf, envelope, seedDaemon, seedSession, startStandInDaemon, waitFor, workerServicesFor, type Responder } from '../workers/support.js';
import { startDiscoverySync } from '../../workers/discoverySync.js';
import { processServerPoll } from '../../workers/serverPoll.js';
import { pollDaemon } from '../../src/modules/serverPoll/poller.js';
import { processDeliveryJob } from '../../workers/webhookDelivery.js';
import { dispatchEvents, enqueueDispatched, type DeliveryJob } from '../../src/modules/webhooks/delivery.js';
import { startReceiver } from '../webhooks/receiver.js';
import { readSse } from '../support/sse.js';
import { explainedInSavepoint, partitionsByTable, type Plan } from '../support/pruningAudit.js';

describe('core/partition pruning (partitioned schema)', () => {
  let app: TestApp;
  let t: Tenant;
  let host: any;
  let daemon: DaemonClient;
  let lan: any;
  let tenantTables: RegExp;
  const original = Db.prototype.query;
  let recorded: Array<{ sql: string; plan: Plan }> = [];

  before(async function () {
    this.timeout(180_000); // two tenants with hosts, on a busy machine
    app = await startTestApp({ webhookAllowedNetworks: ['127.0.0.0/8'] }); // a disabled webhook to loopback: nothing is sent
    const db = new Db(app.services.orm.em.fork());
    const variant = (await db.one<{ v: string }>(`select schema_variant() as v`))!.v;
    if (variant !== 'partitioned') {
      await app.close();
      this.skip();
    }
    const tenant = [...(await tableClasses(db))].filter(([, c]) => c === 'tenant').map(([name]) => name);
    tenantTables = new RegExp(`\\b(${tenant.join('|')})\\b`);
    t = await registerTenant(app.url);
    // A second organization, so that every table has rows in more than one partition.
    const other = await registerTenant(app.url, 'other');
    const otherSubnet = await createSubnet(app.url, other.owner, other.defaultNetworkId);
    await createHostWithChildren(app.url, other.owner, other.defaultNetworkId, otherSubnet.id);
    const subnet = await createSubnet(app.url, t.owner, t.defaultNetworkId);
    host = await createHostWithChildren(app.url, t.owner, t.defaultNetworkId, subnet.id);
    // A daemon of each organization, and a discovered host of the other one (ingest's tables have rows in two partitions).
    const otherDaemon = await newDaemon(other);
    const otherLan = await postSubnet(otherDaemon, other.defaultNetworkId, '10.9.0.0/24');
    await postHost(otherDaemon, report(otherDaemon, other.defaultNetworkId, otherLan.id));
    daemon = await newDaemon(t);
    lan = await postSubnet(daemon, t.defaultNetworkId, '10.9.0.0/24');
  });
  after(async () => {
    Db.prototype.query = original;
    if (app && t) await app.close();
  });

  async function newDaemon(tenant: Tenant): Promise<DaemonClient> {
    const d = daemonClient(app.url, (await createDaemonKey(app.url, tenant.owner, tenant.defaultNetworkId)).key);
    await registerDaemon(d, tenant.defaultNetworkId);
    return d;
  }
  /** A discovered host with an address (and its MAC), two ports and a service bound to one. */
  const report = (d: DaemonClient, networkId: string, subnetId: string, ports = [22, 80]) => hostReport(d, networkId, {
    interfaces: [{ subnet_id: subnetId, ip_address: '10.9.0.5', mac_address: '00:16:3E:00:00:09' }],
    ports: ports.map((number) => ({ number })), services: [{ name: 'OpenSSH', ports: [22] }],
  });

  const explained = (tx: Db, sql: string, params: unknown[]) => explainedInSavepoint(original, tx, sql, params);

  /**
   * The statements on tenant tables one request makes, and the tables each reads on more than one
   * partition. Each statement is explained just before it runs, where it runs: in its transaction
   * (a savepoint rolled back), or in a transaction of its own rolled back; so it meets the rows it
   * really meets, and a write (an insert of a new id) can be explained too.
   */
  async function unpruned(request: () => Promise<unknown>): Promise<string[]> {
    recorded = [];
    Db.prototype.query = async function (this: Db, sql: string, params: unknown[] = []) {
      if (tenantTables.test(sql) && !/^\s*(explain|savepoint|rollback)/i.test(sql)) {
        const plan = this.em.isInTransaction()
          ? await explained(this, sql, params)
          : await this.transaction(async (tx) => explained(tx, sql, params));
        recorded.push({ sql, plan });
      }
      return original.call(this, sql, params);
    } as typeof original;
    try {
      await request();
    } finally {
      Db.prototype.query = original;
    }
    expect(recorded.length).to.be.greaterThan(0);
    const out: string[] = [];
    // Statements that read every organization on purpose are marked ACROSS_ORGANIZATIONS (src/core/db.ts):
    // whether another organization has an id (ingest, register, restore, a daemon's unknown key), the
    // webhook dispatcher and sweep, and a job that does not name its organization (queued before jobs did).
    for (const s of recorded.filter((r) => !r.sql.startsWith(ACROSS_ORGANIZATIONS))) {
      for (const [table, parts] of partitionsByTable(s.plan)) {
        if (parts.size > 1) out.push(`${table} on ${parts.size} partitions: ${s.sql.replace(/\s+/g, ' ').slice(0, 160)}`);
      }
    }
    return out;
  }

  it('host list: one partition per table', async () => {
    expect(await unpruned(async () => expectOk(await call(app.url, 'GET', `/api/v1/hosts?network_id=${t.defaultNetworkId}`, { auth: t.owner })))).to.deep.equal([]);
  });

  // A member sees the networks granted to it (src/core/principal.ts USER_NETWORKS: user_network_access).
  it('host list by a member granted the network: one partition per table', async () => {
    const member = await createUser(app.url, t.owner, 'Member', [t.defaultNetworkId]);
    expect(await unpruned(async () => expectOk(await call(app.url, 'GET', `/api/v1/hosts?network_id=${t.defaultNetworkId}`, { auth: member.auth })))).to.deep.equal([]);
  });

  it('host by id: one partition per table', async () => {
    expect(await unpruned(async () => expectOk(await call(app.url, 'GET', `/api/v1/hosts/${host.id}`, { auth: t.owner })))).to.deep.equal([]);
  });

  it('host list as of an instant: one partition per table', async () => {
    const at = new Date().toISOString();
    expect(await unpruned(async () => expectOk(await call(app.url, 'GET', `/api/v1/hosts?at=${encodeURIComponent(at)}`, { auth: t.owner })))).to.deep.equal([]);
  });

  it('PUT with children (sync): one partition per table', async () => {
    const body = {
      id: host.id, name: 'renamed', hidden: false, tags: [], hostname: host.hostname, description: host.description,
      ports: [...host.ports.map((p: any) => ({ id: p.id, number: p.number, protocol: p.protocol })), { number: 443, protocol: 'Tcp' }],
    };
    expect(await unpruned(async () => expectOk(await call(app.url, 'PUT', `/api/v1/hosts/${host.id}`, { auth: t.owner, body })))).to.deep.equal([]);
  });

  // Discovery ingest (src/modules/discovery/): a daemon's statements name its organization as well
  // as its network, so each reads and writes the organization's partition only.
  it('discovery: a subnet report, new and known: one partition per table', async () => {
    expect(await unpruned(async () => postSubnet(daemon, t.defaultNetworkId, '10.8.0.0/24'))).to.deep.equal([]);
    expect(await unpruned(async () => postSubnet(daemon, t.defaultNetworkId, '10.9.0.0/24'))).to.deep.equal([]);
  });

  it('discovery: a new host, the same report again (unchanged), then a changed one: one partition per table', async () => {
    const first = report(daemon, t.defaultNetworkId, lan.id);
    expect(await unpruned(async () => postHost(daemon, first))).to.deep.equal([]);
    expect(await unpruned(async () => postHost(daemon, first))).to.deep.equal([]);
    expect(await unpruned(async () => postHost(daemon, report(daemon, t.defaultNetworkId, lan.id, [22, 80, 443])))).to.deep.equal([]);
  });

  // The host-children endpoints (/ports, /services, /ip-addresses): their parent's lock and the
  // siblings' positions name the organization too.
  it('host children: a port created, updated and deleted, a service moved, an address added first and deleted: one partition per table', async () => {
    const auth = { auth: t.owner };
    let port: any;
    expect(await unpruned(async () => { port = expectOk(await call(app.url, 'POST', '/api/v1/ports', { ...auth, body: { host_id: host.id, number: 8443, protocol: 'Tcp' } }), 201); })).to.deep.equal([]);
    expect(await unpruned(async () => expectOk(await call(app.url, 'PUT', `/api/v1/ports/${port.id}`, { ...auth, body: { id: port.id, number: 8444, protocol: 'Tcp' } })))).to.deep.equal([]);
    expect(await unpruned(async () => expectOk(await call(app.url, 'DELETE', `/api/v1/ports/${port.id}`, auth)))).to.deep.equal([]);
    const service = host.services[0];
    expect(await unpruned(async () => expectOk(await call(app.url, 'PUT', `/api/v1/services/${service.id}`, { ...auth, body: { id: service.id, name: 'nginx 2', service_definition: service.service_definition, tags: [], position: 1 } })))).to.deep.equal([]);
    let ip: any;
    expect(await unpruned(async () => { ip = expectOk(await call(app.url, 'POST', '/api/v1/ip-addresses', { ...auth, body: { host_id: host.id, subnet_id: host.ip_addresses[0].subnet_id, ip_address: '10.0.0.50', position: 0 } }), 201); })).to.deep.equal([]);
    expect(await unpruned(async () => expectOk(await call(app.url, 'DELETE', `/api/v1/ip-addresses/${ip.id}`, auth)))).to.deep.equal([]);
  });

  // The map (src/modules/topology/service.ts sourceOf, pins): its reads name the organization and the network.
  it('the map, drawn anew, and its export: one partition per table', async () => {
    expect(await unpruned(async () => expectOk(await call(app.url, 'GET', `/api/v1/topology?network_id=${t.defaultNetworkId}`, { auth: t.owner })))).to.deep.equal([]);
    expect(await unpruned(async () => {
      const res = await fetch(`${app.url}/api/v1/topology/export?network_id=${t.defaultNetworkId}&format=mermaid`, { headers: { Cookie: t.owner.cookie! } });
      expect(res.status).to.equal(200);
      await res.text();
    })).to.deep.equal([]);
  });

  it('host history with its children, and one row\'s history: one partition per table', async () => {
    expect(await unpruned(async () => expectOk(await call(app.url, 'GET', `/api/v1/hosts/${host.id}/history`, { auth: t.owner })))).to.deep.equal([]);
    expect(await unpruned(async () => expectOk(await call(app.url, 'GET', `/api/v1/ports/${host.ports[0].id}/history`, { auth: t.owner })))).to.deep.equal([]);
  });

  it('pins: pinned and unpinned: one partition per table', async () => {
    const node = `ip_address:${host.ip_addresses[0].id}`;
    const pin = { network_id: t.defaultNetworkId, view: 'l3', positions: { [node]: { x: 1, y: 2 } } };
    expect(await unpruned(async () => expectOk(await call(app.url, 'PUT', '/api/v1/topology/positions', { auth: t.owner, body: pin })))).to.deep.equal([]);
    expect(await unpruned(async () => expectOk(await call(app.url, 'DELETE', `/api/v1/topology/positions?network_id=${t.defaultNetworkId}&view=l3`, { auth: t.owner })))).to.deep.equal([]);
  });

  it('webhooks: updated, secret rotated, deliveries listed and redelivered, deleted: one partition per table', async () => {
    const auth = { auth: t.owner };
    const body = { name: 'pruned', url: 'http://127.0.0.1:9/hook', enabled: false };
    const hook = expectOk(await call(app.url, 'POST', '/api/v1/webhooks', { ...auth, body }), 201);
    expect(await unpruned(async () => expectOk(await call(app.url, 'PUT', `/api/v1/webhooks/${hook.id}`, { ...auth, body: { ...body, name: 'pruned 2' } })))).to.deep.equal([]);
    expect(await unpruned(async () => expectOk(await call(app.url, 'POST', `/api/v1/webhooks/${hook.id}/rotate-secret`, auth)))).to.deep.equal([]);
    expect(await unpruned(async () => expectOk(await call(app.url, 'GET', `/api/v1/webhooks/${hook.id}/deliveries`, auth)))).to.deep.equal([]);
    expect(await unpruned(async () => expectOk(await call(app.url, 'POST', `/api/v1/webhooks/${hook.id}/redeliver`, { ...auth, body: { since: '2020-01-01T00:00:00Z' } }), 202))).to.deep.equal([]);
    expect(await unpruned(async () => expectOk(await call(app.url, 'DELETE', `/api/v1/webhooks/${hook.id}`, auth)))).to.deep.equal([]);
  });

  it('a binding updated, and a duplicate host consolidated into another: one partition per table', async () => {
    const auth = { auth: t.owner };
    const b = host.services[0].bindings[0];
    expect(await unpruned(async () => expectOk(await call(app.url, 'PUT', `/api/v1/bindings/${b.id}`, { ...auth, body: { id: b.id, type: b.type, port_id: b.port_id } })))).to.deep.equal([]);
    const twin = await createHostWithChildren(app.url, t.owner, t.defaultNetworkId, host.ip_addresses[0].subnet_id, 'twin');
    expect(await unpruned(async () => expectOk(await call(app.url, 'PUT', `/api/v1/hosts/${host.id}/consolidate/${twin.id}`, auth)))).to.deep.equal([]);
  });

  it('an empty network deleted (its contents counted first): one partition per table', async () => {
    const network = expectOk(await call(app.url, 'POST', '/api/v1/networks', { auth: t.owner, body: { name: 'pruned' } }), 201);
    expect(await unpruned(async () => expectOk(await call(app.url, 'DELETE', `/api/v1/networks/${network.id}`, { auth: t.owner })))).to.deep.equal([]);
  });

  // A network's restore (src/modules/networks/restore.ts): the history it brings back is read in the
  // organization's partition; whether a row's id is live again in any organization is asked apart, marked.
  it('a deleted network restored with its contents: one partition per table', async () => {
    const network = expectOk(await call(app.url, 'POST', '/api/v1/networks', { auth: t.owner, body: { name: 'restored' } }), 201);
    const subnet = await createSubnet(app.url, t.owner, network.id);
    await createHostWithChildren(app.url, t.owner, network.id, subnet.id, 'restored');
    const before = new Date().toISOString();
    expectOk(await call(app.url, 'DELETE', `/api/v1/networks/${network.id}?cascade=true`, { auth: t.owner }));
    let back: any;
    expect(await unpruned(async () => { back = expectOk(await call(app.url, 'POST', `/api/v1/networks/${network.id}/restore?at=${encodeURIComponent(before)}`, { auth: t.owner })); })).to.deep.equal([]);
    expect(back.restored).to.include({ subnets: 1, hosts: 1 });
  });

  // The daemon protocol: the caller's key names the organization, and every statement names it too
  // (but one on purpose: whether another organization has used the daemon's chosen id).
  it('a daemon\'s startup, request-work, heartbeat, capabilities and register again; its page: one partition per table', async () => {
    const STATUS = { name: 'scanopy-daemon', mode: 'daemon_poll', version: '0.14.13' };
    const sent = (res: { status: number }) => expect(res.status).to.be.below(300);
    expect(await unpruned(async () => expectOk(await daemon.post(`/api/daemons/${daemon.id}/startup`, { daemon_version: '0.14.13' })))).to.deep.equal([]);
    expect(await unpruned(async () => sent(await daemon.post(`/api/daemons/${daemon.id}/request-work`, STATUS)))).to.deep.equal([]);
    expect(await unpruned(async () => sent(await daemon.post(`/api/daemons/${daemon.id}/heartbeat`, STATUS)))).to.deep.equal([]);
    expect(await unpruned(async () => sent(await daemon.post(`/api/daemons/${daemon.id}/update-capabilities`, { has_docker_socket: false, interfaced_subnets: [] })))).to.deep.equal([]);
    expect(await unpruned(async () => registerDaemon(daemon, t.defaultNetworkId))).to.deep.equal([]);
    expect(await unpruned(async () => expectOk(await call(app.url, 'GET', `/api/v1/daemons/${daemon.id}`, { auth: t.owner })))).to.deep.equal([]);
  });

  it('a daemon\'s sessions listed, one cancelled, a scan queued: one partition per table', async () => {
    const auth = { auth: t.owner };
    let sessions: any[] = [];
    expect(await unpruned(async () => { sessions = expectOk(await call(app.url, 'GET', `/api/v1/daemons/${daemon.id}/sessions`, auth)); })).to.deep.equal([]);
    const open = sessions.find((x) => !['Complete', 'Failed', 'Cancelled'].includes(x.phase));
    if (open) expect(await unpruned(async () => expectOk(await call(app.url, 'POST', `/api/v1/daemons/${daemon.id}/sessions/${open.id}/cancel`, auth), 202))).to.deep.equal([]);
    expect(await unpruned(async () => expect((await call(app.url, 'POST', `/api/v1/daemons/${daemon.id}/sessions`, auth)).status).to.be.oneOf([201, 409]))).to.deep.equal([]);
  });

  it('a daemon\'s scan targets approved, listed and revoked: one partition per table', async () => {
    const auth = { auth: t.owner };
    const sent = (res: { status: number }) => expect(res.status).to.be.below(300);
    expect(await unpruned(async () => sent(await call(app.url, 'POST', `/api/v1/daemons/${daemon.id}/targets`, { ...auth, body: { subnet_id: lan.id } })))).to.deep.equal([]);
    expect(await unpruned(async () => sent(await call(app.url, 'POST', `/api/v1/daemons/${daemon.id}/targets`, { ...auth, body: { cidr: '10.9.0.0/24' } })))).to.deep.equal([]);
    expect(await unpruned(async () => expectOk(await call(app.url, 'GET', `/api/v1/daemons/${daemon.id}/targets`, auth)))).to.deep.equal([]);
    expect(await unpruned(async () => sent(await call(app.url, 'DELETE', `/api/v1/daemons/${daemon.id}/targets/${lan.id}`, auth)))).to.deep.equal([]);
  });

  // Issue 27.3, the statements the audit found (npm run audit:pruning): each names the organization,
  // inside correlated subqueries and joins too.
  it('an interface created and updated (its address and if_index checked): one partition per table', async () => {
    const auth = { auth: t.owner };
    const ipAddressId = host.ip_addresses[0].id;
    let iface: any;
    expect(await unpruned(async () => { iface = expectOk(await call(app.url, 'POST', '/api/v1/interfaces', { ...auth, body: { host_id: host.id, if_index: 7, ip_address_id: ipAddressId } }), 201); })).to.deep.equal([]);
    expect(await unpruned(async () => expectOk(await call(app.url, 'PUT', `/api/v1/interfaces/${iface.id}`, { ...auth, body: { id: iface.id, if_index: 8, ip_address_id: ipAddressId } })))).to.deep.equal([]);
  });

  it('a subnet created over another (warned), narrowed, then deleted (its use counted first): one partition per table', async () => {
    const auth = { auth: t.owner };
    let wide: any;
    expect(await unpruned(async () => { wide = expectOk(await call(app.url, 'POST', '/api/v1/subnets', { ...auth, body: { name: 'wide', cidr: '10.0.0.0/16', network_id: t.defaultNetworkId } }), 201); })).to.deep.equal([]);
    expect(wide.warnings?.map((w: any) => w.code)).to.include('subnet_overlap');
    const narrowed = { name: 'wide', cidr: '10.0.0.0/17', description: null, subnet_type: wide.subnet_type, tags: [] };
    expect(await unpruned(async () => expectOk(await call(app.url, 'PUT', `/api/v1/subnets/${wide.id}`, { ...auth, body: { id: wide.id, ...narrowed } })))).to.deep.equal([]);
    expect(await unpruned(async () => expectOk(await call(app.url, 'DELETE', `/api/v1/subnets/${wide.id}`, auth)))).to.deep.equal([]);
  });

  it('a user created with network grants, and its grants changed: one partition per table', async () => {
    const email = `grants-${Date.now()}@example.com`;
    let user: any;
    expect(await unpruned(async () => {
      user = expectOk(await call(app.url, 'POST', '/api/v1/users', { auth: t.owner, body: { email, password: 'correct horse battery staple', permissions: 'Member', network_ids: [t.defaultNetworkId] } }), 201);
    })).to.deep.equal([]);
    expect(await unpruned(async () => expectOk(await call(app.url, 'PUT', `/api/v1/users/${user.id}`, { auth: t.owner, body: { permissions: 'Viewer', network_ids: [t.defaultNetworkId] } })))).to.deep.equal([]);
  });

  // `AA:BB:CC` is both a start of an (IPv6) address and a MAC fragment: every child is searched.
  it('host list searched by q, now and at an instant: one partition per table', async () => {
    let found: any[] = [];
    expect(await unpruned(async () => { found = expectOk(await call(app.url, 'GET', `/api/v1/hosts?q=AA:BB:CC`, { auth: t.owner })); })).to.deep.equal([]);
    expect(found.map((h) => h.id)).to.include(host.id);
    const at = new Date().toISOString();
    expect(await unpruned(async () => { found = expectOk(await call(app.url, 'GET', `/api/v1/hosts?q=AA:BB:CC&at=${encodeURIComponent(at)}`, { auth: t.owner })); })).to.deep.equal([]);
    expect(found.map((h) => h.id)).to.include(host.id);
    expect(await unpruned(async () => expectOk(await call(app.url, 'GET', `/api/v1/hosts?q=10.0.0`, { auth: t.owner })))).to.deep.equal([]);
  });

  it('a host deleted (no daemon on it, asked first): one partition per table', async () => {
    const doomed = expectOk(await call(app.url, 'POST', '/api/v1/hosts', { auth: t.owner, body: { name: 'doomed', network_id: t.defaultNetworkId } }), 201);
    expect(await unpruned(async () => expectOk(await call(app.url, 'DELETE', `/api/v1/hosts/${doomed.id}`, { auth: t.owner })))).to.deep.equal([]);
  });

  it('hosts created in bulk with addresses (held addresses looked up): one partition per table', async () => {
    const subnetId = host.ip_addresses[0].subnet_id;
    const body = [
      { name: 'bulk-1', network_id: t.defaultNetworkId, ip_addresses: [{ subnet_id: subnetId, ip_address: '10.0.0.201' }] },
      { name: 'bulk-2', network_id: t.defaultNetworkId, ip_addresses: [{ subnet_id: subnetId, ip_address: '10.0.0.202' }] },
    ];
    expect(await unpruned(async () => expectOk(await call(app.url, 'POST', '/api/v1/hosts/bulk', { auth: t.owner, body }), 201))).to.deep.equal([]);
  });

  it('a service\'s bindings replaced, a host\'s too, and the bindings listed by host: one partition per table', async () => {
    const auth = { auth: t.owner };
    const current = await createHostWithChildren(app.url, t.owner, t.defaultNetworkId, host.ip_addresses[0].subnet_id, 'svc');
    const [nginx, snmpd] = current.services;
    const portId = (n: number) => current.ports.find((p: any) => p.number === n).id;
    const serviceBody = { id: nginx.id, name: nginx.name, service_definition: nginx.service_definition, tags: [], position: nginx.position, bindings: [{ type: 'Port', port_id: portId(22) }] };
    expect(await unpruned(async () => expectOk(await call(app.url, 'PUT', `/api/v1/services/${nginx.id}`, { ...auth, body: serviceBody })))).to.deep.equal([]);
    const service = (s: any, bindings: unknown[]) => ({ id: s.id, name: s.name, service_definition: s.service_definition, tags: [], bindings });
    const hostBody = {
      id: current.id, name: current.name, hidden: false, tags: [], hostname: current.hostname, description: current.description,
      services: [service(nginx, [{ type: 'Port', port_id: portId(80) }]), service(snmpd, [{ type: 'IPAddress', ip_address_id: current.ip_addresses[1].id }])],
    };
    expect(await unpruned(async () => expectOk(await call(app.url, 'PUT', `/api/v1/hosts/${current.id}`, { ...auth, body: hostBody })))).to.deep.equal([]);
    let listed: any[] = [];
    expect(await unpruned(async () => { listed = expectOk(await call(app.url, 'GET', `/api/v1/bindings?host_id=${current.id}`, auth)); })).to.deep.equal([]);
    expect(listed.map((b) => b.port_id ?? b.ip_address_id)).to.have.members([portId(80), current.ip_addresses[1].id]);
  });

  // A diff reads the history of the window's hosts (and of the hosts an edge joins to them); a timeline the instants of changes.
  it('a diff (by window and by last changes, l3 and application) and a timeline: one partition per table', async () => {
    const auth = { auth: t.owner };
    // Dependencies by service and by binding: their members' hosts are looked up too.
    const current = await createHostWithChildren(app.url, t.owner, t.defaultNetworkId, host.ip_addresses[0].subnet_id, 'diffed');
    const dependency = (name: string, members: unknown) => ({ name, network_id: t.defaultNetworkId, color: 'Blue', dependency_type: 'RequestPath', edge_style: 'Bezier', members, tags: [] });
    expectOk(await call(app.url, 'POST', '/api/v1/dependencies', { ...auth, body: dependency('by service', { type: 'Services', service_ids: [current.services[0].id] }) }), 201);
    expectOk(await call(app.url, 'POST', '/api/v1/dependencies', { ...auth, body: dependency('by binding', { type: 'Bindings', binding_ids: [current.services[0].bindings[0].id] }) }), 201);
    const from = (await dbOf(app).one<{ now: string }>(`select to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as now`))!.now;
    // One port renumbered: its host changed, the host row itself not (so the hosts to compare are looked for).
    const port = current.ports.find((p: any) => p.number === 161);
    expectOk(await call(app.url, 'PUT', `/api/v1/ports/${port.id}`, { ...auth, body: { id: port.id, number: 162, protocol: 'Udp' } }));
    // And a binding added to a new port (a binding's change names its host through its service).
    const added = expectOk(await call(app.url, 'POST', '/api/v1/ports', { ...auth, body: { host_id: current.id, number: 9090, protocol: 'Tcp' } }), 201);
    expectOk(await call(app.url, 'POST', '/api/v1/bindings', { ...auth, body: { service_id: current.services[0].id, type: 'Port', port_id: added.id } }), 201);
    const q = `network_id=${t.defaultNetworkId}`;
    for (const path of [`diff?${q}&from=${encodeURIComponent(from)}`, `diff?${q}&from=${encodeURIComponent(from)}&view=application`, `diff?${q}&last_changes=5`, `timeline?${q}&from=${encodeURIComponent(from)}`]) {
      expect(await unpruned(async () => expectOk(await call(app.url, 'GET', `/api/v1/topology/${path}`, auth))), path).to.deep.equal([]);
    }
  });

  // The feed and a stream read the organization's events; the hub's one read of new events for every stream is marked.
  it('the event feed, and a stream opened from now and after a cursor: one partition per table', async () => {
    const auth = { auth: t.owner };
    const tag = async (name: string) => expectOk(await call(app.url, 'POST', '/api/v1/tags', { ...auth, body: { name, color: 'Blue' } }), 201);
    await tag('feed-1');
    let feed: any[] = [];
    expect(await unpruned(async () => { feed = expectOk(await call(app.url, 'GET', '/api/v1/events?after=0&types=tag.*', auth)); })).to.deep.equal([]);
    expect(feed.length).to.be.greaterThan(0);
    /** A stream read until an event of a tag named `name` arrives (from its catch-up or live), then closed. */
    const streamUntil = async (name: string, headers: Record<string, string> = {}, create?: () => Promise<unknown>) => {
      const controller = new AbortController();
      const res = await fetch(`${app.url}/api/v1/events/stream?types=tag.*`, { headers: { Accept: 'text/event-stream', Cookie: t.owner.cookie!, ...headers }, signal: controller.signal });
      expect(res.status).to.equal(200);
      let arrived!: () => void;
      const seen = new Promise<void>((resolve) => { arrived = resolve; });
      void readSse(res.body, (frame) => { if (frame.data?.data?.name === name) arrived(); });
      await create?.();
      await seen;
      controller.abort();
    };
    expect(await unpruned(async () => streamUntil('feed-2', {}, () => tag('feed-2')))).to.deep.equal([]);
    expect(await unpruned(async () => streamUntil('feed-1', { 'Last-Event-ID': '0' }))).to.deep.equal([]);
  });

  /** The statements of the last recorded request marked as reading every organization (exempt above) and naming `table`. */
  const marked = (table: string) => recorded.filter((r) => r.sql.startsWith(ACROSS_ORGANIZATIONS) && new RegExp(`\\b${table}\\b`).test(r.sql)).map((r) => r.sql.replace(/\s+/g, ' ').slice(0, 120));

  // A server_poll daemon's cycle (src/modules/serverPoll/poller.ts), run in-process as the worker
  // runs it: its job names the daemon's organization, so every statement reads one partition.
  it('a server poll cycle: first contact (default sessions), entities synced and confirmed, sessions cancelled, a failed poll, an old job: one partition per table', async function () {
    this.timeout(120_000);
    const services = workerServicesFor(app, { serverPollTimeoutMs: 500, serverPollAckWaitMs: 20_000 });
    // The subnet and host of a real SelfReport (daemon_to_server.json of v0.14.10), sent one a poll.
    const recording = readRecording('v0.14.10', 'daemon_to_server.json');
    const body = (path: string) => structuredClone(recording.exchanges.find((e) => e.path === path).request_body);
    const subnet = { ...body('/api/v1/subnets'), network_id: t.defaultNetworkId };
    const reportedHost = body('/api/v1/hosts/discovery');
    reportedHost.host.network_id = t.defaultNetworkId;
    let entities: { subnets: unknown[]; hosts: unknown[] } = { subnets: [subnet], hosts: [] };
    const STATUS = { name: 'scanopy-daemon-serverpoll', mode: 'server_poll', version: '0.14.10', capabilities: { has_docker_socket: false, interfaced_subnet_ids: [] } };
    const answering: Responder = (req) => {
      if (req.path === '/api/first-contact' || req.path === '/api/status') return { status: 200, body: envelope(STATUS) };
      if (req.path === '/api/poll') return { status: 200, body: envelope({ progress: null, entities }) };
      if (req.path === '/api/discovery/initiate') return { status: 200, body: envelope({ session_id: (req.body as { session_id: string }).session_id }) };
      if (req.path === '/api/discovery/cancel') return { status: 409, body: { success: false, error: 'not running', meta: { api_version: 1, server_version: '0.14.10' } } };
      if (req.path === '/api/discovery/entities-created') return { status: 200, body: envelope('Created entities acknowledged') };
      return undefined;
    };
    const standIn = await startStandInDaemon(answering);
    const sync = await startDiscoverySync(services);
    try {
      const d = await seedDaemon(app, { orgId: t.orgId, networkId: t.defaultNetworkId, url: standIn.url });
      const job = { name: 'poll', data: { daemonId: d.id, organizationId: t.orgId } };
      let outcome: any;
      // First contact: the default sessions queued, the first handed out; the subnet synced and confirmed.
      expect(await unpruned(async () => { outcome = await processServerPoll(services, job); })).to.deep.equal([]);
      expect(outcome).to.include({ result: 'ok', entitiesQueued: 1, entitiesConfirmed: 1 });
      expect(outcome.initiated).to.have.length(1);
      expect(marked('daemons')).to.deep.equal([]); // (ingest's own question about the new ids is marked: not the poll's)
      // A scan queued behind it (first contact queues none before a subnet is approved for the daemon).
      await seedSession(app, { orgId: t.orgId, networkId: t.defaultNetworkId, daemonId: d.id, discoveryType: JSON.stringify({ type: 'Network', subnet_ids: null, host_naming_fallback: 'BestService' }) });
      // Both sessions asked to stop: the running one told to the daemon (its 409: over), the pending one at once; the host synced.
      await dbOf(app).query(`update discovery_sessions set cancel_requested = true where organization_id = ? and daemon_id = ?`, [t.orgId, d.id]);
      entities = { subnets: [], hosts: [reportedHost] };
      expect(await unpruned(async () => { outcome = await processServerPoll(services, job); })).to.deep.equal([]);
      expect(outcome).to.include({ result: 'ok', entitiesQueued: 1, entitiesConfirmed: 1 });
      expect(outcome.cancelled).to.have.length(2);
      // No answer: the failure counted, the error kept.
      standIn.respond = () => 'drop';
      expect(await unpruned(async () => { outcome = await pollDaemon(services, d.id, t.orgId); })).to.deep.equal([]);
      expect(outcome).to.include({ result: 'failed', consecutiveFailures: 1 });
      // A job queued before jobs named the organization: the daemon found by id in every partition (marked), the rest in one.
      standIn.respond = answering;
      entities = { subnets: [], hosts: [] };
      expect(await unpruned(async () => { outcome = await processServerPoll(services, { name: 'poll', data: { daemonId: d.id } }); })).to.deep.equal([]);
      expect(outcome).to.include({ result: 'ok' });
      expect(marked('daemons')).to.have.length(1);
    } finally {
      await sync.close();
      await standIn.close();
      await services.close();
    }
  });

  // The webhook delivery worker (src/modules/webhooks/delivery.ts): the dispatcher reads every
  // organization's events and endpoints on purpose (marked), writes each organization's deliveries
  // apart, and queues jobs of one organization each; a job's claim and writes read one partition.
  it('webhook delivery: dispatched, failed (retry), delivered, an old job, a 410 (disabled): one partition per table', async function () {
    this.timeout(60_000);
    const services = workerServicesFor(app);
    let status = 500;
    const receiver = await startReceiver(() => status);
    try {
      const auth = { auth: t.owner };
      const hook = expectOk(await call(app.url, 'POST', '/api/v1/webhooks', { ...auth, body: { name: 'delivered', url: receiver.url, event_types: ['tag.*'] } }), 201);
      const deliveries = async () => dbOf(app).query<{ id: string; status: string; attempts: number }>(
        `select id, status, attempts from webhook_deliveries where organization_id = ? and webhook_id = ? order by created_at, id`, [t.orgId, hook.id]);
      /** A tag created, its event sequenced, then dispatched (recorded) and its job taken from the queue. */
      const eventDispatched = async (name: string) => {
        const tag = expectOk(await call(app.url, 'POST', '/api/v1/tags', { ...auth, body: { name, color: 'Blue' } }), 201);
        await waitFor('the tag\'s event', async () => dbOf(app).one(`select 1 from events where organization_id = ? and entity_id = ?`, [t.orgId, tag.id]));
        expect(await unpruned(async () => {
          for (;;) {
            const { events, deliveries: written } = await dispatchEvents(dbOf(app));
            await enqueueDispatched(services.queues, written);
            if (!events) return;
          }
        })).to.deep.equal([]);
        const [delivery] = (await deliveries()).slice(-1);
        const jobs = await services.queues.webhookDelivery.getJobs(['waiting', 'delayed']);
        const job = jobs.find((j) => (j.data as DeliveryJob).deliveryIds.includes(delivery!.id))!;
        expect(job.data).to.deep.include({ organizationId: t.orgId });
        return { delivery: delivery!, job };
      };
      const { delivery, job } = await eventDispatched('pruned-1');
      // 500: the attempt logged, the delivery to be retried, the endpoint failing; the retry job names the organization.
      expect(await unpruned(async () => expect(await processDeliveryJob(services, job)).to.include({ retries: 1 }))).to.deep.equal([]);
      const retry = await services.queues.webhookDelivery.getJob(`d-${delivery.id}-1`);
      expect(retry!.data).to.deep.equal({ deliveryIds: [delivery.id], organizationId: t.orgId });
      // 200: delivered, the endpoint no longer failing.
      status = 200;
      await dbOf(app).query(`update webhook_deliveries set next_attempt_at = now() where organization_id = ? and id = ?`, [t.orgId, delivery.id]);
      expect(await unpruned(async () => expect(await processDeliveryJob(services, retry!)).to.include({ delivered: 1 }))).to.deep.equal([]);
      expect(marked('webhook_deliveries')).to.deep.equal([]);
      // A job queued before jobs named the organization: its claim finds the delivery by id in every partition (marked), the writes one.
      await dbOf(app).query(`update webhook_deliveries set status = 'pending', next_attempt_at = now() where organization_id = ? and id = ?`, [t.orgId, delivery.id]);
      expect(await unpruned(async () => expect(await processDeliveryJob(services, { data: { deliveryIds: [delivery.id] } })).to.include({ delivered: 1 }))).to.deep.equal([]);
      expect(marked('webhook_deliveries')).to.have.length(1);
      // 410: the endpoint disabled (and webhook.disabled recorded).
      status = 410;
      const gone = await eventDispatched('pruned-2');
      expect(await unpruned(async () => expect(await processDeliveryJob(services, gone.job)).to.include({ failed: 1 }))).to.deep.equal([]);
      expect(expectOk(await call(app.url, 'GET', `/api/v1/webhooks/${hook.id}`, auth))).to.include({ enabled: false, disabled_reason: 'gone' });
      expect((await deliveries()).map((d) => d.status)).to.deep.equal(['delivered', 'failed']);
    } finally {
      await receiver.close();
      await services.close();
    }
  });
});
