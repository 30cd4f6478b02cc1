// The binding rules of hostSync.planServices, over every binding of one host after a change
// (pure, so the /bindings and /services endpoints and the host sync can share them):
// identical bindings of one service are one binding; within a service an IPAddress binding
// conflicts with a Port binding on the same address or on all addresses; a port is bound by at
// most one service of the host.
import { AppError, alreadyExists } from '../../core/errors.js';

export interface BindingFacts {
  id: string;
  service_id: string;
  type: 'Port' | 'IPAddress';
  port_id: string | null;
  ip_address_id: string | null;
}

const invalid = (field: string, reason: string) => new AppError('validation_failed', { field, reason }, `Validation failed: ${field} ${reason}`);

/**
 * Checks the bindings of a host after a change. `changed` are the ids just written: an error
 * names one of them (the other side of a conflict is already stored). `field` prefixes the
 * field of the error (`''` for a binding body, `bindings` for a service body).
 */
export function assertBindingRules(all: BindingFacts[], changed: ReadonlySet<string>, field: string): void {
  const at = (name: string) => (field ? `${field}.${name}` : name);
  const ordered = [...all].sort((a, b) => Number(changed.has(a.id)) - Number(changed.has(b.id))); // stored ones first
  const identical = new Map<string, string>();
  const portOwner = new Map<string, string>();
  const addressBound = new Map<string, Set<string>>(); // service → ip addresses bound by IPAddress bindings
  const portsOf = new Map<string, BindingFacts[]>(); // service → its Port bindings
  for (const b of ordered) {
    const key = `${b.service_id}|${b.type}|${b.port_id}|${b.ip_address_id}`;
    if (identical.has(key)) throw alreadyExists('Binding', 'service_id/type/port_id/ip_address_id', `${b.service_id}/${b.type}/${b.port_id ?? b.ip_address_id}`);
    identical.set(key, b.id);
    if (b.type === 'IPAddress') {
      let set = addressBound.get(b.service_id);
      if (!set) addressBound.set(b.service_id, (set = new Set()));
      set.add(b.ip_address_id!);
    } else {
      const owner = portOwner.get(b.port_id!);
      if (owner !== undefined && owner !== b.service_id) throw invalid(at('port_id'), `port ${b.port_id} is already bound to service ${owner}`);
      portOwner.set(b.port_id!, b.service_id);
      let list = portsOf.get(b.service_id);
      if (!list) portsOf.set(b.service_id, (list = []));
      list.push(b);
    }
  }
  for (const [service, ports] of portsOf) {
    const addresses = addressBound.get(service);
    if (!addresses?.size) continue;
    for (const p of ports) {
      if (p.ip_address_id === null || addresses.has(p.ip_address_id)) {
        const which = changed.has(p.id) ? p.id : (all.find((b) => b.service_id === service && b.type === 'IPAddress' && changed.has(b.id))?.id ?? p.id);
        throw invalid(at('ip_address_id'), `binding ${which} conflicts: an IP address binding and a port binding on the same address (or on all addresses) in one service`);
      }
    }
  }
}
