// Which TCP ports a host gets probed on: a light default set, ports known from earlier runs,
// extra ports asked for, and one slice of the full range per run (the full range spread over runs).

/**
 * ~100 common TCP ports of servers, network devices, databases and home appliances (our own
 * pick: remote access, web, mail, file sharing, databases, queues, monitoring, virtualization).
 * 161 (SNMP) is UDP and not here. 9100–9107 are never in it (see RAW_SOCKET_PORTS).
 */
export const LIGHT_PORTS: readonly number[] = [
  // remote access and infrastructure
  21, 22, 23, 25, 53, 88, 110, 111, 135, 139, 143, 179, 389, 443, 445, 465, 514, 515, 548, 554, 587, 631, 636,
  873, 993, 995, 1080, 1194, 1433, 1521, 1723, 1883, 1900, 2049, 2082, 2083, 2222, 2375, 2376, 2379, 3000, 3128,
  3268, 3306, 3389, 3690, 4443, 4444, 5000, 5001, 5060, 5061, 5353, 5432, 5601, 5672, 5900, 5985, 5986, 6379,
  6443, 6667, 7070, 7443, 8000, 8006, 8008, 8080, 8081, 8086, 8088, 8123, 8200, 8291, 8443, 8500, 8883, 8888,
  9000, 9001, 9042, 9090, 9091, 9200, 9300, 9418, 9443, 10000, 10050, 10051, 11211, 15672, 25565, 27017, 32400,
  49152, 50000, 51820, 80, 81, 8009, 1025,
  // home media and network appliances: AirPlay, Jellyfin, the MikroTik API
  7000, 8096, 8728,
];

/** Raw printing ports: a printer prints whatever arrives there (ghost pages). Opt-in only. */
export const RAW_SOCKET_PORTS = { first: 9100, last: 9107 } as const;

export function isRawSocketPort(port: number): boolean {
  return port >= RAW_SOCKET_PORTS.first && port <= RAW_SOCKET_PORTS.last;
}

/** Slice `index` (taken modulo `of`) of 1–65535: `of` contiguous, nearly equal ranges that cover it all. */
export function fullRangeSlice(index: number, of: number): number[] {
  if (!Number.isInteger(of) || of < 1 || !Number.isInteger(index) || index < 0) {
    throw new Error(`bad full-range slice ${index}/${of}`);
  }
  const i = index % of;
  const from = Math.floor((i * 65535) / of) + 1;
  const to = Math.floor(((i + 1) * 65535) / of);
  const out: number[] = [];
  for (let p = from; p <= to; p++) out.push(p);
  return out;
}

export interface PortChoice {
  extraPorts?: number[];
  known?: number[];
  fullRangeSlice?: { index: number; of: number };
  probeRawSocketPorts?: boolean;
}

/** The ports to probe on one address, ascending, each once; 9100–9107 only when probeRawSocketPorts. */
export function portsToProbe(choice: PortChoice, base: readonly number[] = LIGHT_PORTS): number[] {
  const all = new Set<number>(base);
  for (const p of choice.known ?? []) all.add(p);
  for (const p of choice.extraPorts ?? []) all.add(p);
  if (choice.fullRangeSlice) for (const p of fullRangeSlice(choice.fullRangeSlice.index, choice.fullRangeSlice.of)) all.add(p);
  return [...all]
    .filter((p) => Number.isInteger(p) && p >= 1 && p <= 65535)
    .filter((p) => choice.probeRawSocketPorts || !isRawSocketPort(p))
    .sort((a, b) => a - b);
}
