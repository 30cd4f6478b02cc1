// The contract between the agent's scanner (agent/scan, agent/fingerprint) and the rest of the
// agent (agent/runner.ts turns a ScanReport into the daemon protocol's entities). Pure data.
import type { SnmpCredentials } from '../snmp/credentials.js';
import type { CustomRule } from '../fingerprint/custom.js';

/** One range the agent was told to scan: from --targets, or a subnet approved on the server. */
export interface ScanTarget {
  /** IPv4 CIDR (a single address is /32). */
  cidr: string;
  /** The server's subnet id when the target came from the server (else the runner makes one). */
  subnetId?: string;
  /** Probe every address's ports even without liveness evidence (nmap's -Pn); never invents a host. */
  assumeUp?: boolean;
  /** Ask live hosts over SNMP v2c with the community `public` too (after the given credentials). */
  snmpPublic?: boolean;
  /** Probe 9100–9107 on this target (a printer prints what it receives: opt-in). */
  probeRawSocketPorts?: boolean;
}

/** Why a host is believed alive: every host carries at least one. */
export type Evidence =
  | { kind: 'tcp_open'; port: number }
  | { kind: 'tcp_refused'; port: number } // a RST: something answered for this address
  | { kind: 'neighbour'; mac: string } // the kernel's neighbour table (on-link subnets only)
  | { kind: 'arp'; mac: string } // raw ARP (only with CAP_NET_RAW)
  | { kind: 'icmp' } // raw ICMP echo (only with CAP_NET_RAW)
  | { kind: 'udp'; port: number } // a UDP answer (SNMP, DNS, NTP)
  | { kind: 'snmp_arp'; mac: string; device: string }; // a device's ARP table (IP-MIB) over SNMP: nothing sent to the address itself

/** LLDP: the neighbour a port sees (lldpRemTable, lldpRemManAddrTable). */
export interface LldpNeighbour {
  chassisId: string | null;
  portId: string | null;
  portDesc: string | null;
  sysName: string | null;
  sysDesc: string | null;
  mgmtAddr: string | null;
}

/** One IF-MIB row (ifTable + ifXTable), with what the device's LLDP and forwarding tables say of it. */
export interface SnmpInterface {
  ifIndex: number;
  descr: string | null;
  name: string | null;
  alias: string | null;
  type: number | null;
  speedBps: number | null;
  adminStatus: 'Up' | 'Down' | 'Testing' | null;
  operStatus: 'Up' | 'Down' | 'Testing' | 'Unknown' | 'Dormant' | 'NotPresent' | 'LowerLayerDown' | null;
  mac: string | null;
  lldp: LldpNeighbour | null;
  /** MACs the forwarding table (BRIDGE or Q-BRIDGE) learned on this port; absent when the device has none. */
  fdbMacs?: string[];
}

export type SnmpCollection = 'system' | 'if_table' | 'fdb' | 'lldp' | 'arp';

/** What a device told over SNMP (agent/snmp/collect.ts). */
export interface SnmpDevice {
  /** Which credential answered (never the secret), e.g. "v2c community", "v3 user ops (authPriv)". */
  credential: string;
  system: { name: string | null; descr: string | null; objectId: string | null; location: string | null; contact: string | null; chassisId: string | null };
  interfaces: SnmpInterface[];
  /** IP-MIB ARP rows (any address: the scanner keeps those inside its targets). */
  arp: Array<{ ip: string; mac: string }>;
  /** Each walk: complete, or partial (cut short: what it got is still sent). */
  collections: Partial<Record<SnmpCollection, 'complete' | 'partial'>>;
  /** One line per cut walk: device, table, why. */
  incomplete: string[];
}

export type Confidence = 'Low' | 'Medium' | 'High' | 'Certain';

/** A service recognised by a rule of agent/fingerprint/rules.ts. */
export interface FoundService {
  /** The rule's id, e.g. "redis-ping". */
  rule: string;
  /** Display name, e.g. "Redis". */
  name: string;
  /** The Scanopy service_definition string sent to the server, e.g. "Redis". */
  definition: string;
  port: number;
  protocol: 'Tcp' | 'Udp';
  confidence: Confidence;
  /** Human text: rule, probe, port and the bytes matched, e.g. `rule redis-ping: probe "PING\r\n" on 6379/tcp answered "+PONG"`. */
  reason: string;
  /** Facts the match read, e.g. { product: "OpenSSH", version: "9.2p1", os: "Debian" }. */
  facts?: Record<string, string>;
  /**
   * Everything recognised on the port, one per layer (a protocol, the server, the application, a
   * device, an OS), each with its rule, evidence and confidence; the service is named after the
   * most specific.
   */
  findings?: Finding[];
}

/** What a port's answers say at one layer: "server nginx 1.22.1", "application Grafana", "os Debian". */
export type Layer = 'protocol' | 'server' | 'application' | 'device' | 'os';

export interface Finding {
  layer: Layer;
  /** "nginx", "Grafana", "Synology DiskStation", "Debian"; with its version when the bytes say it. */
  name: string;
  version?: string;
  vendor?: string;
  /** A device's kind ("NAS", "Printer", "Router", "Camera") when the evidence says it. */
  deviceType?: string;
  rule: string;
  confidence: Confidence;
  /** The bytes that said it, escaped: `Server "nginx/1.22.1"`. */
  evidence: string;
}

export interface FoundHost {
  ip: string;
  /** From the neighbour table or raw ARP, upper case "AA:BB:..."; null on routed targets. */
  mac: string | null;
  /** True for a locally administered (random) MAC: flagged, never identity alone. */
  macIsRandom?: boolean;
  /** The MAC's vendor (OUI), null when unknown or random. */
  macVendor?: string | null;
  /** The host's name: PTR, mDNS or SNMP sysName (hostnameSource says which). */
  hostname: string | null;
  hostnameSource?: 'ptr' | 'mdns' | 'snmp';
  evidence: Evidence[];
  openPorts: Array<{ port: number; protocol: 'Tcp' | 'Udp' }>;
  services: FoundService[];
  /** What it told over SNMP, when a credential answered. */
  snmp?: SnmpDevice;
  /** The target (CIDR) it belongs to. */
  target: ScanTarget;
}

export interface ScanReport {
  /** Addresses tried (network/broadcast addresses and excluded ones are not tried). */
  addressesTried: number;
  /** Alive hosts counted by evidence kind. */
  aliveByEvidence: Record<string, number>;
  hosts: FoundHost[];
  /** One line each, e.g. "198.18.20.128/25: 126 addresses answered 5060/tcp alike: a middlebox? none recorded". */
  warnings: string[];
  /** Probes sent (TCP connects + UDP datagrams), for the budget and the bench. */
  probesSent: number;
  cancelled: boolean;
  /** Collections left incomplete (an SNMP walk cut short), one line each naming device and table. */
  incomplete?: string[];
}

export interface ScanBudget {
  /** Probes started per second, across all hosts (one global token bucket). */
  probesPerSecond: number;
  /** Sockets open at once, across all hosts. */
  maxOpenSockets: number;
}

export interface ScanOptions {
  targets: ScanTarget[];
  budget: ScanBudget;
  /** Extra TCP ports to probe on every live host (known ports of known hosts come through `known`). */
  extraPorts?: number[];
  /** Probe 9100–9107 (printers print what they receive): off unless asked. */
  probeRawSocketPorts?: boolean;
  /** Which slice of the full port range this run adds (run counter); undefined: light set only. */
  fullRangeSlice?: { index: number; of: number };
  /** Ports found open on a previous run, per address: always probed again (a stopped service is noticed). */
  known?: Record<string, number[]>;
  /** SNMP credentials to try on each live host and device; none: no SNMP. */
  snmp?: SnmpCredentials;
  /** A DNS resolver (inside the targets or loopback) for PTR names; none: no PTR lookup. */
  dnsServer?: string;
  /** Ask each live host for its name over unicast mDNS (UDP 5353 of the host itself). */
  mdns?: boolean;
  /** The organization's custom service definitions as rules (agent/fingerprint/custom.ts), tried before ours. */
  customRules?: CustomRule[];
  signal?: AbortSignal;
  /** 0..100, called when it rises. */
  onProgress?: (percent: number) => void;
  /** Called once per live host as soon as it is fully probed (the runner reports it right away). */
  onHost?: (host: FoundHost) => Promise<void> | void;
}

/** The scanner's entry point (agent/scan/scan.ts). */
export type ScanNetwork = (options: ScanOptions) => Promise<ScanReport>;
