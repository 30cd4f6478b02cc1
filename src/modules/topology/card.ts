// What a summary card says, pure, shared by the layout (which sizes the card for its
// lines) and the map (which draws them, each whole or not at all): a summary node of quiet hosts
// (graph.ts quietFolds) or a container collapsed over max_nodes, as a few short lines — how many,
// where, of which kinds, how many offline or new — rather than one long label that Fit would cut.

/** The fields of a graph node a card reads (GraphNode's, which both sides have). */
export interface CardNode {
  kind: string;
  label: string;
  cidr?: unknown;
  subnet_name?: unknown;
  host_kinds?: unknown;
  offline_count?: unknown;
  new_count?: unknown;
  counts?: unknown;
  collapsed_kind?: unknown;
}

/** A host kind (hostKind.ts) as a person counts it: "3 access points". */
const KIND_NAMES: Record<string, [string, string]> = {
  firewall: ['firewall', 'firewalls'], router: ['router', 'routers'], switch: ['switch', 'switches'], access_point: ['access point', 'access points'],
  printer: ['printer', 'printers'], camera: ['camera', 'cameras'], nas: ['NAS', 'NAS'], phone: ['phone', 'phones'],
  container_host: ['container host', 'container hosts'], hypervisor: ['hypervisor', 'hypervisors'], virtual_machine: ['VM', 'VMs'],
  server: ['server', 'servers'], workstation: ['workstation', 'workstations'], host: ['host', 'hosts'],
  ip_address: ['address', 'addresses'], service: ['service', 'services'], interface: ['interface', 'interfaces'],
};

export const counted = (n: number, kind: string) => {
  const [one, many] = KIND_NAMES[kind] ?? [kind.replace(/_/g, ' '), `${kind.replace(/_/g, ' ')}s`];
  return `${n.toLocaleString('en')} ${n === 1 ? one : many}`;
};

const numbers = (x: unknown): Array<[string, number]> => (x && typeof x === 'object' ? Object.entries(x as Record<string, unknown>).filter((e): e is [string, number] => typeof e[1] === 'number' && e[1] > 0) : []);

/** At most this many kinds are named, one a line; the rest are counted on the last. */
const KIND_LINES = 3;

/**
 * A card's lines, most important first: its count (the title), where it is, its kinds, offline and
 * new. A line is drawn whole or not at all; when the card is small on screen the map draws only the
 * first lines that fit. Undefined for a node that is not a card.
 */
export function cardLines(n: CardNode): string[] | undefined {
  if (n.kind === 'summary') {
    const kinds = numbers(n.host_kinds);
    const total = numbers(n.counts).reduce((a, [, v]) => a + v, 0) || kinds.reduce((a, [, v]) => a + v, 0);
    const named = kinds.slice(0, kinds.length > KIND_LINES ? KIND_LINES - 1 : KIND_LINES).map(([k, v]) => counted(v, k));
    const rest = kinds.slice(named.length).reduce((a, [, v]) => a + v, 0);
    const status = [Number(n.offline_count) > 0 ? `${n.offline_count} offline` : '', Number(n.new_count) > 0 ? `${n.new_count} new` : ''].filter(Boolean).join(' · ');
    // A subnet's name only when it says more than its CIDR.
    const where = typeof n.cidr === 'string' ? (typeof n.subnet_name === 'string' && n.subnet_name !== n.cidr ? `${n.subnet_name} · ${n.cidr}` : n.cidr) : '';
    // (History draws the live summary over the interval: its count is a bound there, "up to …".)
    return [`${/^up to /.test(n.label) ? 'up to ' : ''}${counted(total, 'host')}`, where, ...named, rest ? `${rest} more` : '', status].filter(Boolean);
  }
  if (n.kind === 'collapsed') {
    const counts = numbers(n.counts);
    const total = counts.reduce((a, [, v]) => a + v, 0);
    return [n.label, ...(counts.length === 1 ? [counted(total, counts[0]![0])] : [`${total.toLocaleString('en')} elements`, ...counts.map(([k, v]) => counted(v, k))])];
  }
  return undefined;
}

/** The first line of a card is bold; all are this many graph units a character where the card is sized (a zoom of 0.5 reads them). */
export const CARD_CHAR = 14;
export const CARD_LINE = 30;
export const CARD_PADDING = 24;

/** A card's size: every line whole at a zoom of 0.5 (a map at Fit), a card at least twice as wide as a host's box. */
export function cardSize(lines: string[]): { width: number; height: number } {
  const longest = Math.max(...lines.map((l) => l.length));
  return { width: Math.max(240, Math.min(640, CARD_PADDING * 2 + CARD_CHAR * longest)), height: CARD_PADDING + CARD_LINE * lines.length };
}
