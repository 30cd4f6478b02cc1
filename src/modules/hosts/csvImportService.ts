// `POST /api/v1/hosts/import/csv`: reads what the network holds for the file's rows, plans with
// csvImport.ts, and answers the plan (dry run) or applies it (commit) in one transaction through
// the host and subnet services, so every rule, history state and event of a manual write holds:
// one transaction is one history instant and one event batch, and a refusal anywhere stores nothing.
import Joi from 'joi';
import type { Db } from '../../core/db.js';
import { AppError } from '../../core/errors.js';
import type { Row } from '../../core/historyTable.js';
import type { Scope } from '../../core/scope.js';
import { CSV_BODY_LIMIT_BYTES } from '../../http/csvBody.js';
import { validate } from '../../http/pipeline.js';
import { uuid } from '../../http/schemas.js';
import { networkService } from '../networks/service.js';
import { subnetService } from '../subnets/service.js';
import { CsvSyntaxError, parseCsv } from './csvParse.js';
import {
  CSV_COLUMNS, CsvHeaderError, MAX_IMPORT_ROWS, MAX_LISTED_REFUSALS, planImport, portText, rowsOf,
  type ExistingHost, type ImportPlan, type ImportState, type PlannedAddress, type SubnetRef,
} from './csvImport.js';
import { withChildren } from './hostView.js';
import { hostCreate, hostUpdate } from './schemas.js';
import { BULK_MAX_IP_ADDRESSES, createHosts } from './bulkCreate.js';
import { hostService, type HostInput } from './service.js';
import { hostTable } from './table.js';

/** New hosts per set-based create (POST /hosts/bulk takes 1,000). */
const CREATE_BATCH = 1000;

const badFile = (reason: string) => new AppError('validation_failed', { field: 'body', reason }, `The CSV file is refused: ${reason}`);

/** The network's hosts, subnets, tags and held addresses that the file's rows concern. */
async function loadState(db: Db, scope: Scope, networkId: string, names: string[], ips: string[]): Promise<{ state: ImportState; rows: Map<string, Row> }> {
  const [hostRows, subnets, tags, addresses] = await Promise.all([
    names.length
      ? hostTable.list(db, scope, { where: [['t.network_id = ?', [networkId]], ['t.name = any(?::text[])', [names]]], order: [{ column: 'created_at', direction: 'asc' }], limit: 0, offset: 0 }).then((r) => r.rows)
      : Promise.resolve([]),
    // organization_id too: every key of a tenant table ends with it (one partition on the partitioned schema).
    db.query<{ id: string; cidr: string }>(`select id, cidr::text as cidr from subnets where organization_id = ? and network_id = ? order by cidr`, [scope.organizationId, networkId]),
    db.query<{ id: string; name: string }>(`select id, name from tags where organization_id = ? order by name`, [scope.organizationId]),
    ips.length
      ? db.query<{ ip_address: string; subnet_id: string; host_id: string; host_name: string }>(
        `select host(a.ip_address) as ip_address, a.subnet_id, a.host_id, h.name as host_name
         from ip_addresses a join hosts h on h.id = a.host_id and h.organization_id = a.organization_id
         where a.organization_id = ? and a.network_id = ? and a.ip_address = any(?::inet[])`, [scope.organizationId, networkId, ips])
      : Promise.resolve([]),
  ]);
  const hosts = await withChildren(db, scope.organizationId, hostRows);
  const existing: ExistingHost[] = hosts.map((h) => ({
    id: h.id as string, name: h.name as string, hostname: h.hostname as string | null, description: h.description as string | null,
    tags: h.tags as string[], updated_at: h.updated_at as string,
    ip_addresses: (h.ip_addresses as Row[]).map((a) => ({ id: a.id as string, ip_address: a.ip_address as string, subnet_id: a.subnet_id as string, mac_address: a.mac_address as string | null })),
    ports: (h.ports as Row[]).map((p) => ({ number: p.number as number, protocol: p.protocol as 'Tcp' | 'Udp' })),
    services: (h.services as Row[]).map((s) => ({ name: s.name as string })),
  }));
  return { state: { hosts: existing, subnets, tags, addresses }, rows: new Map(hosts.map((h) => [h.id as string, h])) };
}

/** The rows of the CSV text; a file that cannot be read at all is 400. */
function readRows(text: string) {
  try {
    return rowsOf(parseCsv(text, MAX_IMPORT_ROWS + 1));
  } catch (err) {
    if (err instanceof CsvSyntaxError || err instanceof CsvHeaderError) throw badFile(err.message);
    throw err;
  }
}

async function plan(db: Db, scope: Scope, networkId: string, text: string) {
  const { rows } = readRows(text);
  const names = [...new Set(rows.map((r) => (r.cells.name ?? '').trim()).filter(Boolean))];
  const ips = [...new Set(rows.map((r) => (r.cells.address ?? '').trim()).filter((ip) => Joi.string().ip({ cidr: 'forbidden' }).validate(ip).error === undefined))];
  const { state, rows: hostRows } = await loadState(db, scope, networkId, names, ips);
  return { plan: planImport(rows, state), hostRows };
}

const addressOut = (a: PlannedAddress) => ({ ip_address: a.ip_address, subnet: a.subnet.cidr, mac_address: a.mac_address });

/** The answer: what the plan does (ids once committed). */
function answer(networkId: string, p: ImportPlan, committed?: { hosts: Map<string, string>; subnets: Map<string, string> }) {
  const rowsRefused = new Set(p.refused.map((r) => r.row)).size;
  return {
    dry_run: !committed,
    network_id: networkId,
    rows: p.rows,
    counts: {
      hosts_created: p.create.length, hosts_changed: p.change.length, hosts_unchanged: p.unchanged.length,
      subnets_created: p.subnets_to_create.length, rows_refused: rowsRefused, refusals: p.refused.length,
    },
    subnets_created: p.subnets_to_create.map((cidr) => ({ cidr, id: committed?.subnets.get(cidr) ?? null })),
    created: p.create.map((c) => ({
      id: committed?.hosts.get(c.name) ?? null, name: c.name, rows: c.rows, hostname: c.hostname, description: c.description,
      ip_addresses: c.ip_addresses.map(addressOut), ports: c.ports.map(portText), services: c.services, tags: c.tags.map((t) => t.name),
    })),
    changed: p.change.map((c) => ({
      id: c.id, name: c.name, rows: c.rows,
      changes: [
        ...(c.hostname ? [{ field: 'hostname', from: c.hostname.from, to: c.hostname.to }] : []),
        ...(c.description ? [{ field: 'description', from: c.description.from, to: c.description.to }] : []),
        ...(c.add_ip_addresses.length ? [{ field: 'ip_addresses', added: c.add_ip_addresses.map((a) => `${a.ip_address} (${a.subnet.cidr}${a.subnet.id ? '' : ', new'})${a.mac_address ? ` ${a.mac_address}` : ''}`) }] : []),
        ...c.mac_changes.map((m) => ({ field: 'mac_address', item: m.ip_address, from: m.from, to: m.to })),
        ...(c.add_ports.length ? [{ field: 'ports', added: c.add_ports.map(portText) }] : []),
        ...(c.add_services.length ? [{ field: 'services', added: c.add_services }] : []),
        ...(c.add_tags.length ? [{ field: 'tags', added: c.add_tags.map((t) => t.name) }] : []),
      ],
    })),
    unchanged: p.unchanged,
    refused: p.refused.slice(0, MAX_LISTED_REFUSALS),
  };
}

/** Applies a plan without refusals, inside the caller's transaction; answers the new ids. */
async function apply(tx: Db, scope: Scope, networkId: string, p: ImportPlan, hostRows: Map<string, Row>) {
  const subnets = new Map<string, string>();
  for (const cidr of p.subnets_to_create) {
    const created = await subnetService.create(tx, scope, { cidr, name: cidr, description: 'Created by a CSV import', subnet_type: 'None', tags: [], network_id: networkId });
    subnets.set(cidr, created.id as string);
  }
  const subnetId = (ref: SubnetRef) => ref.id ?? subnets.get(ref.cidr)!;
  const newAddress = (a: PlannedAddress) => ({ subnet_id: subnetId(a.subnet), ip_address: a.ip_address, mac_address: a.mac_address });
  const newService = (name: string) => ({ name, service_definition: name.slice(0, 100) });
  const hosts = new Map<string, string>();
  // New hosts through the set-based create of POST /hosts/bulk (the single create's rules, a fixed
  // number of statements per batch), in batches within its caps (hosts and addresses per call).
  const bodies = p.create.map((c) => validate(hostCreate, {
    name: c.name, network_id: networkId, hostname: c.hostname, description: c.description, tags: c.tags.map((t) => t.id),
    ip_addresses: c.ip_addresses.map(newAddress), ports: c.ports, services: c.services.map(newService),
  }, 'body') as HostInput);
  for (let start = 0; start < bodies.length;) {
    let end = start;
    let addresses = 0;
    while (end < bodies.length && (end === start || (end - start < CREATE_BATCH && addresses + (bodies[end]!.ip_addresses?.length ?? 0) <= BULK_MAX_IP_ADDRESSES))) addresses += bodies[end++]!.ip_addresses?.length ?? 0;
    const created = await createHosts(tx, scope, bodies.slice(start, end));
    created.forEach((host, i) => hosts.set(p.create[start + i]!.name, host.id as string));
    start = end;
  }
  for (const c of p.change) {
    // The host as read for the plan, with the additions: an update that keeps what is there.
    const current = hostRows.get(c.id)!;
    const body: Record<string, unknown> = {
      id: c.id, name: current.name, hidden: current.hidden, virtualization: current.virtualization,
      tags: [...(current.tags as string[]), ...c.add_tags.map((t) => t.id)],
      hostname: c.hostname?.to ?? current.hostname, description: c.description?.to ?? current.description,
      expected_updated_at: c.updated_at,
    };
    if (c.add_ip_addresses.length || c.mac_changes.length) {
      const macs = new Map(c.mac_changes.map((m) => [m.address_id, m.to]));
      body.ip_addresses = [
        ...(current.ip_addresses as Row[]).map((a) => ({ ...a, mac_address: macs.get(a.id as string) ?? a.mac_address })),
        ...c.add_ip_addresses.map(newAddress),
      ];
    }
    if (c.add_ports.length) body.ports = [...(current.ports as Row[]), ...c.add_ports];
    if (c.add_services.length) body.services = [...(current.services as Row[]), ...c.add_services.map(newService)];
    await hostService.update(tx, scope, c.id, validate(hostUpdate, body, 'body') as never);
  }
  return { hosts, subnets };
}

export async function importHostsCsv(db: Db, scope: Scope, networkId: string, dryRun: boolean, text: string) {
  // As the list's network_id filter: another organization's network is 404, one out of reach 403.
  await networkService.assertFilterable(db, scope, networkId);
  if (dryRun) {
    const { plan: p } = await db.transaction((tx) => plan(tx, scope, networkId, text), { snapshot: true });
    return answer(networkId, p);
  }
  return db.transaction(async (tx) => {
    // Imports into one network take turns: the second plans against what the first stored
    // (changing the hosts the first created instead of creating them twice).
    await tx.query(`select pg_advisory_xact_lock(hashtext('csv-import:' || ?))`, [networkId]);
    const { plan: p, hostRows } = await plan(tx, scope, networkId, text);
    if (p.refused.length) {
      throw new AppError('csv_import_refused', {
        rows_refused: new Set(p.refused.map((r) => r.row)).size,
        refused: p.refused.slice(0, MAX_LISTED_REFUSALS).map((r) => ({ row: r.row, column: r.column, value: r.value, message: r.message })),
      });
    }
    return answer(networkId, p, await apply(tx, scope, networkId, p, hostRows));
  });
}

// ---- The route's schemas ----------------------------------------------------------------------

export const csvImportQuery = Joi.object({
  network_id: uuid().required().description('The network the hosts are imported into'),
  dry_run: Joi.boolean().default(true).description('true (default): answer what would be created, changed and refused, storing nothing; false: apply it in one transaction, all or nothing'),
});

export const csvImportBody = Joi.string().max(CSV_BODY_LIMIT_BYTES).description(
  `RFC 4180 CSV with a header row. Columns (any order, \`name\` required): ${CSV_COLUMNS.join(', ')}. `
  + 'Rows with the same name are one host (one address per row). ports: `22/tcp;53/udp`; services and tags: names separated by `;`. '
  + `At most ${MAX_IMPORT_ROWS} rows; see the README, "Importing hosts from CSV".`,
).example('name,address,subnet,ports,services,tags\nweb-01,10.0.1.10,10.0.1.0/24,22/tcp;443/tcp,ssh;https,production\n');

const text = () => Joi.string().allow(null);
export const csvImportResponse = Joi.object({
  dry_run: Joi.boolean().description('true: nothing was stored'),
  network_id: uuid(),
  rows: Joi.number().integer().description('Rows read after the header'),
  counts: Joi.object({
    hosts_created: Joi.number().integer(), hosts_changed: Joi.number().integer(), hosts_unchanged: Joi.number().integer(),
    subnets_created: Joi.number().integer(), rows_refused: Joi.number().integer(), refusals: Joi.number().integer().description('All refusals; `refused` lists the first 200'),
  }).label('HostCsvImportCounts'),
  subnets_created: Joi.array().items(Joi.object({ cidr: Joi.string(), id: uuid().allow(null).description('null in a dry run') }).label('HostCsvImportSubnet')),
  created: Joi.array().items(Joi.object({
    id: uuid().allow(null).description('null in a dry run'), name: Joi.string(), rows: Joi.array().items(Joi.number().integer()),
    hostname: text(), description: text(),
    ip_addresses: Joi.array().items(Joi.object({ ip_address: Joi.string(), subnet: Joi.string(), mac_address: text() }).label('HostCsvImportAddress')),
    ports: Joi.array().items(Joi.string()), services: Joi.array().items(Joi.string()), tags: Joi.array().items(Joi.string()),
  }).label('HostCsvImportCreated')),
  changed: Joi.array().items(Joi.object({
    id: uuid(), name: Joi.string(), rows: Joi.array().items(Joi.number().integer()),
    changes: Joi.array().items(Joi.object({
      field: Joi.string().valid('hostname', 'description', 'ip_addresses', 'mac_address', 'ports', 'services', 'tags'),
      item: Joi.string().optional().description('mac_address: the address whose MAC changes'),
      from: text().optional(), to: Joi.string().optional(), added: Joi.array().items(Joi.string()).optional(),
    }).label('HostCsvImportChange')),
  }).label('HostCsvImportChanged')),
  unchanged: Joi.array().items(Joi.object({ id: uuid(), name: Joi.string(), rows: Joi.array().items(Joi.number().integer()) }).label('HostCsvImportUnchanged')),
  refused: Joi.array().items(Joi.object({
    row: Joi.number().integer().description('The row as a spreadsheet numbers it: the header is row 1'),
    column: Joi.string().valid(...CSV_COLUMNS).allow(null), value: text(), message: Joi.string(),
  }).label('HostCsvImportRefusal')).description('The first 200 refusals, in row order'),
}).label('HostCsvImport');
