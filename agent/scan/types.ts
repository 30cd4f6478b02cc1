// The contract between the agent's scanner (agent/scan, agent/fingerprint) and the rest of the
// agent (agent/runner.ts turns a ScanReport into the daemon protocol's entities). Pure data.

/** One range the agent was told to scan: from --targets, or a subnet approved on the server. */
export interface ScanTarget {
  /** IPv4 CIDR (a single address is /32). */
  cidr: string;
  /** The server's subnet id when the target came from the server (else the runner makes one). */
  subnetId?: string;
  /** Probe every address's ports even without liveness evidence (nmap's -Pn); never invents a host. */
  assumeUp?: boolean;
}

/** Why a host is believed alive: every host carries at least one. */
export type Evidence =
  | { kind: 'tcp_open'; port: number }
  | { kind: 'tcp_refused'; port: number } // a RST: something answered for this address
  | { kind: 'neighbour'; mac: string } // the kernel's neighbour table (on-link subnets only)
  | { kind: 'arp'; mac: string } // raw ARP (only with CAP_NET_RAW)
  | { kind: 'icmp' } // raw ICMP echo (only with CAP_NET_RAW)
  | { kind: 'udp'; port: number }; // a UDP answer (SNMP, DNS, NTP)

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
}

export interface FoundHost {
  ip: string;
  /** From the neighbour table or raw ARP, upper case "AA:BB:..."; null on routed targets. */
  mac: string | null;
  /** True for a locally administered (random) MAC: flagged, never identity alone. */
  macIsRandom?: boolean;
  /** PTR name when one resolves (and its source). */
  hostname: string | null;
  hostnameSource?: 'ptr' | 'mdns' | 'snmp';
  evidence: Evidence[];
  openPorts: Array<{ port: number; protocol: 'Tcp' | 'Udp' }>;
  services: FoundService[];
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
  /** SNMP communities to try (issue 25); empty: no SNMP. */
  snmpCommunities?: string[];
  signal?: AbortSignal;
  /** 0..100, called when it rises. */
  onProgress?: (percent: number) => void;
  /** Called once per live host as soon as it is fully probed (the runner reports it right away). */
  onHost?: (host: FoundHost) => Promise<void> | void;
}

/** The scanner's entry point (agent/scan/scan.ts). */
export type ScanNetwork = (options: ScanOptions) => Promise<ScanReport>;
