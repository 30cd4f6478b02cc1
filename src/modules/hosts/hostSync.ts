// Pure planning of a host's children sync (decisions §6), before any SQL runs: positions,
// duplicates, and the binding rules. Unit-tested without a database (test/hosts/hostSync.spec.ts).
import { randomUUID } from 'node:crypto';
import { AppError, alreadyExists } from '../../core/errors.js';
import { portType, type Protocol } from '../ports/portTypes.js';

export interface IpAddressInput { id?: string; subnet_id: string; ip_address: string; mac_address: string | null; name: string | null; position?: number }
export interface PortInput { id?: string; number: number; protocol: Protocol }
export interface BindingInput { id?: string; type: 'Port' | 'IPAddress'; port_id: string | null; ip_address_id: string | null }
export interface ServiceInput {
  id?: string; name: string; service_definition: string; position?: number; tags: string[];
  virtualization: object | null; bindings: BindingInput[];
}

const invalid = (field: string, reason: string) => new AppError('validation_failed', { field, reason }, `Validation failed: ${field} ${reason}`);

/**
 * Positions: when every item carries one and together they are exactly 0..n-1, they are kept;
 * otherwise the list order is the order. (A client that echoes what it read and appends a new
 * item, or drops one, must not get a 400 for positions it never meant to manage.)
 */
export function assignPositions<T extends { position?: number }>(items: T[]): Array<T & { position: number }> {
  const given = items.map((i) => i.position);
  const permutation = given.every((p) => p !== undefined) && [...given].sort((a, b) => a! - b!).every((p, index) => p === index);
  if (permutation) return items as Array<T & { position: number }>;
  return items.map((item, index) => ({ ...item, position: index }));
}

/** The ids of a host's children as stored (what a PUT may keep). */
export interface OwnChildIds { ipAddresses: Set<string>; ports: Set<string>; services: Set<string>; bindings: Set<string> }

/**
 * A child id that is not one of this host's children is the client's placeholder: the child is new
 * and gets a server-assigned id, and the request's references to the placeholder (a binding's
 * `port_id` / `ip_address_id`) follow it. So an id that exists elsewhere (another host's, another
 * organization's) is neither taken over nor revealed: it answers exactly as an id never used.
 */
export function withServerIds<T extends { ip_addresses?: IpAddressInput[] | null; ports?: PortInput[] | null; services?: ServiceInput[] | null }>(
  input: T, own: OwnChildIds,
): T {
  const fresh = (ids: Set<string>, placeholders: Map<string, string>) => <C extends { id?: string }>(child: C): C => {
    if (!child.id || ids.has(child.id.toLowerCase())) return child;
    const id = placeholders.get(child.id) ?? randomUUID();
    placeholders.set(child.id, id); // listed twice stays listed twice (withIds refuses it)
    return { ...child, id };
  };
  const ipIds = new Map<string, string>();
  const portIds = new Map<string, string>();
  const out = { ...input };
  if (input.ip_addresses) out.ip_addresses = input.ip_addresses.map(fresh(own.ipAddresses, ipIds));
  if (input.ports) out.ports = input.ports.map(fresh(own.ports, portIds));
  if (input.services) {
    const bindingIds = new Map<string, string>();
    out.services = input.services.map(fresh(own.services, new Map())).map((service) => ({
      ...service,
      bindings: (service.bindings ?? []).map(fresh(own.bindings, bindingIds)).map((b) => ({
        ...b,
        port_id: b.port_id ? portIds.get(b.port_id) ?? b.port_id : b.port_id,
        ip_address_id: b.ip_address_id ? ipIds.get(b.ip_address_id) ?? b.ip_address_id : b.ip_address_id,
      })),
    }));
  }
  return out;
}

/** Gives every new child its id and refuses an id listed twice. */
export function withIds<T extends { id?: string }>(items: T[], field: string): Array<T & { id: string }> {
  const seen = new Set<string>();
  return items.map((item, index) => {
    const id = item.id ?? randomUUID();
    if (seen.has(id)) throw invalid(`${field}[${index}].id`, 'is listed twice');
    seen.add(id);
    return { ...item, id };
  });
}

export function planPorts(ports: PortInput[]) {
  const seen = new Set<string>();
  return withIds(ports, 'ports').map((p) => {
    const key = `${p.number}/${p.protocol}`;
    if (seen.has(key)) throw alreadyExists('Port', 'number/protocol', key);
    seen.add(key);
    return { ...p, type: portType(p.number, p.protocol) };
  });
}

export function planIpAddresses(ips: IpAddressInput[]) {
  return assignPositions(withIds(ips, 'ip_addresses'));
}

/**
 * Services and their bindings. Rules (Scanopy's, reference §8–9): identical bindings collapse;
 * within a service an IPAddress binding conflicts with a Port binding on the same address or on
 * all addresses; a port is bound by at most one service of the host.
 */
export function planServices(services: ServiceInput[]) {
  const planned = assignPositions(withIds(services, 'services'));
  const portOwner = new Map<string, number>();
  const bindingIds = new Set<string>();
  return planned.map((service, s) => {
    const field = `services[${s}].bindings`;
    const unique = new Map<string, BindingInput>();
    for (const b of service.bindings) unique.set(`${b.type}|${b.port_id}|${b.ip_address_id}`, b);
    const bindings = withIds([...unique.values()], field).map((b) => {
      if (bindingIds.has(b.id)) throw invalid(field, `binding ${b.id} is listed twice`);
      bindingIds.add(b.id);
      return b;
    });
    const ipBindings = new Set(bindings.filter((b) => b.type === 'IPAddress').map((b) => b.ip_address_id));
    for (const b of bindings.filter((x) => x.type === 'Port')) {
      if (ipBindings.size && (b.ip_address_id === null || ipBindings.has(b.ip_address_id))) {
        throw invalid(field, `port binding ${b.id} conflicts with an IP address binding of the same service`);
      }
      const owner = portOwner.get(b.port_id!);
      if (owner !== undefined && owner !== s) throw invalid(field, `port ${b.port_id} is already bound to service ${planned[owner]!.name}`);
      portOwner.set(b.port_id!, s);
    }
    return { ...service, bindings };
  });
}
