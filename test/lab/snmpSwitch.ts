/// <reference path="../../agent/snmp/net-snmp.d.ts" />
// A simulated switch (net-snmp's agent): system group, IF-MIB (ifTable, ifXTable), IP-MIB ARP,
// BRIDGE and/or Q-BRIDGE forwarding tables (its own MACs among them, as a real switch lists them) and
// LLDP (local ports, remote systems, their management addresses), from a plain description.
// `stopAfter` makes it go silent after that many requests (a walk cut short). Used in-process by the
// unit tests (loopback, a port of their own) and run as a program inside a lab namespace:
// `node --import tsx test/lab/snmpSwitch.ts '<json SwitchSpec>'`.
import snmp from 'net-snmp';
import { createSocket } from 'node:dgram';
import { pathToFileURL } from 'node:url';

export interface SwitchPort {
  ifIndex: number;
  name: string;
  descr?: string;
  alias?: string;
  mac: string;
  speedMbps?: number;
  up?: boolean;
  /** MACs its forwarding table learned on this port. */
  fdb?: string[];
  /** Static entries (status mgmt(5): configured for a host) on this port. */
  staticFdb?: string[];
  /** Entries aged out but not yet flushed (status invalid(2)) on this port. */
  agedFdb?: string[];
  lldp?: { chassisMac: string; portId: string; portDesc?: string; sysName: string; sysDesc?: string; mgmtAddr?: string };
}

export interface SwitchSpec {
  address: string;
  port: number;
  communities: string[];
  /** SNMPv3 users (authPriv SHA/AES unless given). */
  v3?: Array<{ user: string; authKey: string; privKey: string }>;
  sysName: string;
  sysDescr?: string;
  sysObjectId?: string;
  /**
   * The switch's own MAC: LLDP chassis id and bridge address (dot1dBaseBridgeAddress). As real switches
   * do (on port 0 or on a real port), its forwarding tables list its own MACs: this one with status
   * self(4) on the first port; the next one (base + 1: an internal MAC no other table shows) self(4)
   * on the last port; and the last port's own MAC with status mgmt(5) on that port.
   */
  chassisMac?: string;
  ports: SwitchPort[];
  arp?: Array<{ ifIndex: number; ip: string; mac: string }>;
  /** Which forwarding table(s) it fills (many switches fill only Q-BRIDGE). */
  fdbMib?: 'bridge' | 'qbridge' | 'both';
  /** Go silent after this many requests (any kind). */
  stopAfter?: number;
  /** Count (and silence) only requests from this address: a lab's readiness check from elsewhere does not move the count. */
  countOnlyFrom?: string;
}

const T = snmp.ObjectType;
const RO = snmp.MaxAccess['read-only'];
const NA = snmp.MaxAccess['not-accessible'];
const macBytes = (mac: string) => Buffer.from(mac.split(/[:-]/).map((h) => parseInt(h, 16)));
const macParts = (mac: string) => [...macBytes(mac)];
/** The MAC after `mac` (switches take a block of MACs from their base address). */
const nextMac = (mac: string) => (parseInt(mac.replace(/[:-]/g, ''), 16) + 1).toString(16).padStart(12, '0').match(/../g)!.join(':');
const MAC_RE = /^[0-9a-f]{2}([:-][0-9a-f]{2}){5}$/i;

interface Column { number: number; type: number }
interface Row { index: number[]; values: Record<number, unknown> }

/**
 * A table with an integer index of `indexLength` parts (each a not-accessible column numbered
 * from 200, so walks never see them): any index (MACs, LLDP's three parts, addresses) is sub-ids.
 */
function table(mib: any, name: string, oid: string, indexLength: number, columns: Column[], rows: Row[]): void {
  const indexColumns = Array.from({ length: indexLength }, (_, i) => ({ number: 200 + i, name: `${name}Idx${i}`, type: T.Integer, maxAccess: NA }));
  const dataColumns = columns.map((c) => ({ number: c.number, name: `${name}C${c.number}`, type: c.type, maxAccess: RO }));
  mib.registerProvider({
    name, type: snmp.MibProviderType.Table, oid, maxAccess: NA,
    tableColumns: [...dataColumns, ...indexColumns], tableIndex: indexColumns.map((c) => ({ columnName: c.name })),
  });
  for (const row of rows) mib.addTableRow(name, [...columns.map((c) => row.values[c.number]), ...row.index]);
}

function scalar(mib: any, name: string, oid: string, type: number, value: unknown): void {
  mib.registerProvider({ name, type: snmp.MibProviderType.Scalar, oid, scalarType: type, maxAccess: RO });
  mib.setScalarValue(name, value);
}

/** A free UDP port on `address` (net-snmp takes port 0 for 161, so tests pick one first). */
export function freeUdpPort(address = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createSocket('udp4');
    s.once('error', reject);
    s.bind(0, address, () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export interface RunningSwitch {
  /** Requests received (answered or not). */
  requests(): number;
  close(): Promise<void>;
}

export function startSnmpSwitch(spec: SwitchSpec): Promise<RunningSwitch> {
  const agent = snmp.createAgent({ port: spec.port, address: spec.address, disableAuthorization: false, accessControlModelType: snmp.AccessControlModelType.None }, () => undefined);
  const auth = agent.getAuthorizer();
  for (const c of spec.communities) auth.addCommunity(c);
  for (const u of spec.v3 ?? []) {
    auth.addUser({ name: u.user, level: snmp.SecurityLevel.authPriv, authProtocol: snmp.AuthProtocols.sha, authKey: u.authKey, privProtocol: snmp.PrivProtocols.aes, privKey: u.privKey });
  }
  // Each datagram is counted, and dropped once past stopAfter (the listener's own handler is put behind ours).
  let requests = 0;
  for (const socket of Object.values(agent.listener.sockets as Record<string, import('node:dgram').Socket>)) {
    const handlers = socket.listeners('message') as Array<(...args: unknown[]) => void>;
    socket.removeAllListeners('message');
    socket.on('message', (...args: unknown[]) => {
      const from = (args[1] as { address?: string } | undefined)?.address;
      if (spec.countOnlyFrom === undefined || from === spec.countOnlyFrom) {
        requests++;
        if (spec.stopAfter !== undefined && requests > spec.stopAfter) return; // silent from now on
      }
      for (const h of handlers) h(...args);
    });
  }

  const mib = agent.getMib();
  scalar(mib, 'sysDescr', '1.3.6.1.2.1.1.1', T.OctetString, spec.sysDescr ?? `Simulated switch ${spec.sysName}`);
  scalar(mib, 'sysObjectID', '1.3.6.1.2.1.1.2', T.OID, spec.sysObjectId ?? '1.3.6.1.4.1.8072.3.2.10');
  scalar(mib, 'sysContact', '1.3.6.1.2.1.1.4', T.OctetString, 'lab@example.invalid');
  scalar(mib, 'sysName', '1.3.6.1.2.1.1.5', T.OctetString, spec.sysName);
  scalar(mib, 'sysLocation', '1.3.6.1.2.1.1.6', T.OctetString, 'lab rack 1');
  if (spec.chassisMac) {
    scalar(mib, 'lldpLocChassisIdSubtype', '1.0.8802.1.1.2.1.3.1', T.Integer, 4);
    scalar(mib, 'lldpLocChassisId', '1.0.8802.1.1.2.1.3.2', T.OctetString, macBytes(spec.chassisMac));
  }
  const ports = spec.ports;
  table(mib, 'ifTable', '1.3.6.1.2.1.2.2.1', 1, [
    { number: 1, type: T.Integer }, { number: 2, type: T.OctetString }, { number: 3, type: T.Integer }, { number: 5, type: T.Gauge },
    { number: 6, type: T.OctetString }, { number: 7, type: T.Integer }, { number: 8, type: T.Integer },
  ], ports.map((p) => ({ index: [p.ifIndex], values: {
    1: p.ifIndex, 2: p.descr ?? p.name, 3: 6, 5: Math.min(4294967295, (p.speedMbps ?? 1000) * 1_000_000), 6: macBytes(p.mac), 7: 1, 8: p.up === false ? 2 : 1,
  } })));
  table(mib, 'ifXTable', '1.3.6.1.2.1.31.1.1.1', 1, [{ number: 1, type: T.OctetString }, { number: 15, type: T.Gauge }, { number: 18, type: T.OctetString }],
    ports.map((p) => ({ index: [p.ifIndex], values: { 1: p.name, 15: p.speedMbps ?? 1000, 18: p.alias ?? '' } })));
  table(mib, 'ipNetToMediaTable', '1.3.6.1.2.1.4.22.1', 5, [{ number: 2, type: T.OctetString }, { number: 4, type: T.Integer }],
    (spec.arp ?? []).map((a) => ({ index: [a.ifIndex, ...a.ip.split('.').map(Number)], values: { 2: macBytes(a.mac), 4: 3 } })));

  const fdbMib = spec.fdbMib ?? 'both';
  // Bridge port n is ifIndex n + 100 here, so a walker that skips dot1dBasePortIfIndex is caught.
  // Status learned(3), mgmt(5) static, invalid(2) aged; the switch's own MACs (see chassisMac): self(4) and mgmt(5), on real ports.
  const [first, last] = [ports[0], ports[ports.length - 1]];
  const entries = [
    ...ports.flatMap((p) => [...(p.fdb ?? []).map((mac) => ({ mac, bridgePort: p.ifIndex + 100, status: 3 })),
      ...(p.staticFdb ?? []).map((mac) => ({ mac, bridgePort: p.ifIndex + 100, status: 5 })),
      ...(p.agedFdb ?? []).map((mac) => ({ mac, bridgePort: p.ifIndex + 100, status: 2 }))]),
    ...(spec.chassisMac && first ? [{ mac: spec.chassisMac, bridgePort: first.ifIndex + 100, status: 4 }] : []),
    ...(spec.chassisMac && last ? [{ mac: nextMac(spec.chassisMac), bridgePort: last.ifIndex + 100, status: 4 }, { mac: last.mac, bridgePort: last.ifIndex + 100, status: 5 }] : []),
  ];
  if (spec.chassisMac) scalar(mib, 'dot1dBaseBridgeAddress', '1.3.6.1.2.1.17.1.1', T.OctetString, macBytes(spec.chassisMac));
  table(mib, 'dot1dBasePortTable', '1.3.6.1.2.1.17.1.4.1', 1, [{ number: 2, type: T.Integer }],
    ports.map((p) => ({ index: [p.ifIndex + 100], values: { 2: p.ifIndex } })));
  if (fdbMib !== 'qbridge') {
    table(mib, 'dot1dTpFdbTable', '1.3.6.1.2.1.17.4.3.1', 6, [{ number: 2, type: T.Integer }, { number: 3, type: T.Integer }],
      entries.map((e) => ({ index: macParts(e.mac), values: { 2: e.bridgePort, 3: e.status } })));
  }
  if (fdbMib !== 'bridge') {
    table(mib, 'dot1qTpFdbTable', '1.3.6.1.2.1.17.7.1.2.2.1', 7, [{ number: 2, type: T.Integer }, { number: 3, type: T.Integer }],
      entries.map((e) => ({ index: [1, ...macParts(e.mac)], values: { 2: e.bridgePort, 3: e.status } })));
  }
  // LLDP: local port numbers are not ifIndexes (port n + 1000): the walker must map them by name.
  table(mib, 'lldpLocPortTable', '1.0.8802.1.1.2.1.3.7.1', 1, [{ number: 2, type: T.Integer }, { number: 3, type: T.OctetString }, { number: 4, type: T.OctetString }],
    ports.map((p) => ({ index: [p.ifIndex + 1000], values: { 2: 5, 3: p.name, 4: p.descr ?? p.name } })));
  const withLldp = ports.filter((p) => p.lldp);
  table(mib, 'lldpRemTable', '1.0.8802.1.1.2.1.4.1.1', 3, [4, 5, 6, 7, 8, 9, 10].map((n) => ({ number: n, type: [4, 6].includes(n) ? T.Integer : T.OctetString })),
    // A port id that is a MAC goes as subtype macAddress(3), as lldpd announces a port; else interfaceName(5).
    withLldp.map((p, i) => ({ index: [0, p.ifIndex + 1000, i + 1], values: {
      4: 4, 5: macBytes(p.lldp!.chassisMac), 6: MAC_RE.test(p.lldp!.portId) ? 3 : 5, 7: MAC_RE.test(p.lldp!.portId) ? macBytes(p.lldp!.portId) : p.lldp!.portId, 8: p.lldp!.portDesc ?? '', 9: p.lldp!.sysName, 10: p.lldp!.sysDesc ?? '',
    } })));
  table(mib, 'lldpRemManAddrTable', '1.0.8802.1.1.2.1.4.2.1', 9, [{ number: 3, type: T.Integer }],
    withLldp.flatMap((p, i) => (p.lldp!.mgmtAddr ? [{ index: [0, p.ifIndex + 1000, i + 1, 1, 4, ...p.lldp!.mgmtAddr.split('.').map(Number)], values: { 3: 2 } }] : [])));

  return new Promise((resolve) => {
    // createAgent binds at once; the next tick it listens.
    setImmediate(() => resolve({
      requests: () => requests,
      close: () => new Promise<void>((done) => agent.close(() => done())),
    }));
  });
}

// As a program (inside a lab namespace): the spec as JSON in argv[2]; runs until killed.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const spec = JSON.parse(process.argv[2] ?? '{}') as SwitchSpec;
  void startSnmpSwitch(spec).then(() => console.log(`snmp switch ${spec.sysName} on ${spec.address}:${spec.port}`));
}
