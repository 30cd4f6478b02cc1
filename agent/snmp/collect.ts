// What one device tells over SNMP: its system group, interfaces (IF-MIB), ARP table (IP-MIB),
// forwarding tables (BRIDGE and Q-BRIDGE: many switches fill only Q-BRIDGE) and LLDP neighbours.
// Every configured credential is tried in turn until one answers (Scanopy 0.14 tries `public` only).
// Walks are bounded (agent/snmp/session.ts); one cut short marks its collection partial, and a device
// that stopped answering is not walked further (each walk would only wait for its timeouts).
import type { Session } from 'net-snmp';
import type { ProbeBudget } from '../scan/budget.js';
import type { LldpNeighbour, SnmpCollection, SnmpDevice, SnmpInterface } from '../scan/types.js';
import { credentialLabel, type SnmpCredential } from './credentials.js';
import * as OID from './oids.js';
import { DEFAULT_LIMITS, get, indexOf, openSession, walk, type SnmpLimits, type WalkResult } from './session.js';
import { ADMIN, OPER, lldpId, macFrom, macFromIndex, numberFrom, textFrom } from './values.js';

export interface CollectOptions {
  limits?: Partial<SnmpLimits>;
  budget?: ProbeBudget;
  signal?: AbortSignal;
}

type Rows = Map<string, Map<number, unknown>>; // row index ("1", "0.3.1") → column → value

/** Rows of a table entry walk: column number → value, by the index after the column. */
function byRow(result: WalkResult, entry: string): Rows {
  const rows: Rows = new Map();
  for (const v of result.rows) {
    const parts = indexOf(v.oid, entry);
    if (!parts || parts.length < 2) continue;
    const key = parts.slice(1).join('.');
    if (!rows.has(key)) rows.set(key, new Map());
    rows.get(key)!.set(parts[0]!, v.value);
  }
  return rows;
}

/** The first credential that answers a GET of the system group, with what it answered; null: none did. */
async function firstAnswering(ip: string, credentials: SnmpCredential[], limits: SnmpLimits, opts: CollectOptions) {
  for (const cred of credentials) {
    opts.signal?.throwIfAborted();
    const session = openSession(ip, cred, limits);
    session.on('error', () => undefined); // a socket error is a non-answer, seen by get()
    try {
      const oids = [...Object.values(OID.SYSTEM)];
      const ask = () => get(session, oids);
      const system = await (opts.budget ? opts.budget.probe(ask, opts.signal) : ask());
      if (system.size) return { cred, session, system };
    } catch {
      // wrong community (silence), unknown v3 user, wrong key: the next credential
    }
    session.close();
  }
  return null;
}

export async function collectSnmp(ip: string, credentials: SnmpCredential[], opts: CollectOptions = {}): Promise<SnmpDevice | null> {
  const limits = { ...DEFAULT_LIMITS, ...opts.limits };
  const answered = await firstAnswering(ip, credentials, limits, opts);
  if (!answered) return null;
  const { cred, session, system } = answered;
  const device: SnmpDevice = {
    credential: credentialLabel(cred),
    system: {
      name: textFrom(system.get(OID.SYSTEM.name)), descr: textFrom(system.get(OID.SYSTEM.descr)),
      objectId: textFrom(system.get(OID.SYSTEM.objectId)), location: textFrom(system.get(OID.SYSTEM.location)),
      contact: textFrom(system.get(OID.SYSTEM.contact)), chassisId: null,
    },
    interfaces: [], arp: [], collections: { system: 'complete' }, incomplete: [],
  };
  try {
    await walkAll(ip, session, device, limits, opts);
  } finally {
    session.close();
  }
  return device;
}

async function walkAll(ip: string, session: Session, device: SnmpDevice, limits: SnmpLimits, opts: CollectOptions): Promise<void> {
  let silent = false; // the device stopped answering: no further walk
  const cutLines = new Map<SnmpCollection, string[]>();
  const run = async (collection: SnmpCollection, table: string, oid: string): Promise<WalkResult> => {
    opts.signal?.throwIfAborted();
    const result: WalkResult = silent ? { rows: [], cut: 'not walked: the device stopped answering' }
      : await (opts.budget ? opts.budget.probe(() => walk(session, oid, limits), opts.signal) : walk(session, oid, limits));
    if (result.cut) {
      if (!silent && /timed? ?out/i.test(result.cut)) silent = true;
      (cutLines.get(collection) ?? cutLines.set(collection, []).get(collection)!).push(`${table} (${result.cut})`);
    }
    return result;
  };
  const mark = (collection: SnmpCollection, results: WalkResult[], present: boolean) => {
    if (results.some((r) => r.cut)) device.collections[collection] = 'partial';
    else if (present) device.collections[collection] = 'complete';
  };

  // LLDP's own chassis id and the bridge's own MAC (one GET; absent on most hosts).
  let bridgeMac: string | null = null;
  try {
    const loc = await get(session, [OID.LLDP_LOC_CHASSIS_SUBTYPE, OID.LLDP_LOC_CHASSIS_ID, OID.DOT1D_BASE_BRIDGE_ADDRESS]);
    const id = loc.get(OID.LLDP_LOC_CHASSIS_ID);
    device.system.chassisId = id === undefined ? null : lldpId(numberFrom(loc.get(OID.LLDP_LOC_CHASSIS_SUBTYPE)), id, 4, 5);
    bridgeMac = macFrom(loc.get(OID.DOT1D_BASE_BRIDGE_ADDRESS));
  } catch {
    // no answer to this one GET: the walks say whether the device went silent
  }

  // IF-MIB
  const ifWalk = await run('if_table', 'ifTable', OID.IF_ENTRY);
  const ifxWalk = await run('if_table', 'ifXTable', OID.IFX_ENTRY);
  const ifRows = byRow(ifWalk, OID.IF_ENTRY);
  const ifxRows = byRow(ifxWalk, OID.IFX_ENTRY);
  const byIndex = new Map<number, SnmpInterface>();
  for (const [key, cols] of ifRows) {
    const ifIndex = numberFrom(cols.get(1)) ?? Number(key);
    const x = ifxRows.get(key) ?? new Map<number, unknown>();
    const high = numberFrom(x.get(15));
    const speed = high ? high * 1_000_000 : numberFrom(cols.get(5));
    byIndex.set(ifIndex, {
      ifIndex, descr: textFrom(cols.get(2)), name: textFrom(x.get(1)), alias: textFrom(x.get(18)), type: numberFrom(cols.get(3)),
      speedBps: speed, adminStatus: ADMIN[numberFrom(cols.get(7)) as keyof typeof ADMIN] ?? null,
      operStatus: OPER[numberFrom(cols.get(8)) as keyof typeof OPER] ?? null, mac: macFrom(cols.get(6)), lldp: null,
    });
  }
  mark('if_table', [ifWalk, ifxWalk], byIndex.size > 0);

  // IP-MIB ARP: ipNetToPhysicalTable (IPv4 rows), else the older ipNetToMediaTable.
  const arp = new Map<string, string>();
  const physWalk = await run('arp', 'ipNetToPhysicalTable', `${OID.IP_NET_TO_PHYSICAL}.4`);
  for (const v of physWalk.rows) {
    const idx = indexOf(v.oid, `${OID.IP_NET_TO_PHYSICAL}.4`);
    const mac = macFrom(v.value);
    if (idx && idx.length === 7 && idx[1] === 1 && idx[2] === 4 && mac) arp.set(idx.slice(3).join('.'), mac);
  }
  const arpWalks = [physWalk];
  if (!arp.size) {
    const mediaWalk = await run('arp', 'ipNetToMediaTable', `${OID.IP_NET_TO_MEDIA}.2`);
    arpWalks.push(mediaWalk);
    for (const v of mediaWalk.rows) {
      const idx = indexOf(v.oid, `${OID.IP_NET_TO_MEDIA}.2`);
      const mac = macFrom(v.value);
      if (idx && idx.length === 5 && mac) arp.set(idx.slice(1).join('.'), mac);
    }
  }
  device.arp = [...arp].map(([address, mac]) => ({ ip: address, mac }));
  mark('arp', arpWalks, arp.size > 0);

  // Forwarding tables: bridge port → ifIndex, then the MACs each port learned (BRIDGE, and Q-BRIDGE).
  const baseWalk = await run('fdb', 'dot1dBasePortIfIndex', OID.DOT1D_BASE_PORT_IFINDEX);
  const portIf = new Map<number, number>();
  for (const v of baseWalk.rows) {
    const idx = indexOf(v.oid, OID.DOT1D_BASE_PORT_IFINDEX);
    const ifIndex = numberFrom(v.value);
    if (idx?.length === 1 && ifIndex !== null) portIf.set(idx[0]!, ifIndex);
  }
  const fdb = new Map<number, Set<string>>();
  // The switch's own MACs (its bridge address, LLDP chassis id, its interfaces'): a forwarding table lists
  // them too, as self, mgmt or even learned, on port 0 or on a real port; on a port they would be a phantom link.
  const own = new Set([bridgeMac, device.system.chassisId, ...[...byIndex.values()].map((i) => i.mac)].filter((m): m is string => !!m).map((m) => m.toUpperCase()));
  const learn = (port: number | null, status: number | null, mac: string | null, cut: boolean) => {
    // Port 0: not learned on a port (the switch's own MAC, or a row whose port column the walk never reached).
    if (!port || !mac || own.has(mac)) return;
    // No status: the device fills no status column, or (a cut walk: the port column comes first) the walk
    // never reached it; then the row may be the switch's own (self) or aged out (invalid), and is left out.
    if (status === null ? cut : status === OID.FDB_STATUS_SELF || status === OID.FDB_STATUS_INVALID) return;
    const ifIndex = portIf.get(port) ?? port; // many agents number bridge ports as their ifIndex
    (fdb.get(ifIndex) ?? fdb.set(ifIndex, new Set()).get(ifIndex)!).add(mac);
  };
  const dot1dWalk = await run('fdb', 'dot1dTpFdbTable', OID.DOT1D_TP_FDB);
  for (const [key, cols] of byRow(dot1dWalk, OID.DOT1D_TP_FDB)) learn(numberFrom(cols.get(2)), numberFrom(cols.get(3)), macFromIndex(key.split('.').map(Number)), !!dot1dWalk.cut);
  const dot1qWalk = await run('fdb', 'dot1qTpFdbTable', OID.DOT1Q_TP_FDB);
  for (const [key, cols] of byRow(dot1qWalk, OID.DOT1Q_TP_FDB)) learn(numberFrom(cols.get(2)), numberFrom(cols.get(3)), macFromIndex(key.split('.').map(Number).slice(1)), !!dot1qWalk.cut);
  for (const [ifIndex, macs] of fdb) {
    const iface = byIndex.get(ifIndex) ?? blankInterface(ifIndex);
    iface.fdbMacs = [...macs].sort();
    byIndex.set(ifIndex, iface);
  }
  mark('fdb', [baseWalk, dot1dWalk, dot1qWalk], fdb.size > 0 || portIf.size > 0);

  // LLDP: remote systems by local port; the local port number → ifIndex by name, else as is.
  const locWalk = await run('lldp', 'lldpLocPortTable', OID.LLDP_LOC_PORT);
  const remWalk = await run('lldp', 'lldpRemTable', OID.LLDP_REM);
  const manWalk = await run('lldp', 'lldpRemManAddrTable', OID.LLDP_REM_MAN_ADDR);
  const localPortIf = new Map<number, number>();
  for (const [key, cols] of byRow(locWalk, OID.LLDP_LOC_PORT)) {
    const names = [textFrom(cols.get(3)), textFrom(cols.get(4))].filter(Boolean);
    const match = [...byIndex.values()].find((i) => names.some((n) => n === i.name || n === i.descr));
    if (match) localPortIf.set(Number(key), match.ifIndex);
  }
  const mgmt = new Map<string, string>();
  for (const v of manWalk.rows) {
    const idx = indexOf(v.oid, OID.LLDP_REM_MAN_ADDR);
    // column.timeMark.localPort.remIndex.subtype(1=IPv4).len(4).a.b.c.d
    if (idx && idx.length === 10 && idx[4] === 1 && idx[5] === 4) mgmt.set(idx.slice(1, 4).join('.'), idx.slice(6).join('.'));
  }
  let neighbours = 0;
  for (const [key, cols] of byRow(remWalk, OID.LLDP_REM)) {
    const [, localPort] = key.split('.').map(Number);
    if (localPort === undefined) continue;
    const ifIndex = localPortIf.get(localPort) ?? localPort;
    const iface = byIndex.get(ifIndex) ?? blankInterface(ifIndex);
    const neighbour: LldpNeighbour = {
      chassisId: lldpId(numberFrom(cols.get(4)), cols.get(5), 4, 5),
      portId: lldpId(numberFrom(cols.get(6)), cols.get(7), 3, 4),
      portDesc: textFrom(cols.get(8)), sysName: textFrom(cols.get(9)), sysDesc: textFrom(cols.get(10)), mgmtAddr: mgmt.get(key) ?? null,
    };
    iface.lldp ??= neighbour; // one neighbour per port is what an IfEntry holds; the first (lowest index) wins
    byIndex.set(ifIndex, iface);
    neighbours++;
  }
  mark('lldp', [locWalk, remWalk, manWalk], neighbours > 0);

  device.interfaces = [...byIndex.values()].sort((a, b) => a.ifIndex - b.ifIndex);
  for (const [collection, lines] of cutLines) device.incomplete.push(`${ip} ${collection}: ${lines.join(', ')}`);
}

function blankInterface(ifIndex: number): SnmpInterface {
  return { ifIndex, descr: null, name: null, alias: null, type: null, speedBps: null, adminStatus: null, operStatus: null, mac: null, lldp: null };
}
