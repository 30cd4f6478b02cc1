// Each host's dependencies and its role in each (hub, spoke, step n), from the network's
// dependencies and services: the map's host list shows them as the details panel does
// (hostDetails.ts, with the same rules below), for every host at once. Pure: no DOM, no I/O.

export interface DependencyRow { name: string; dependency_type: string; members?: { type: string; service_ids?: string[]; binding_ids?: string[] } }
export interface ServiceRow { id: string; host_id: string; bindings?: Array<{ id: string }> }
export interface HostDependency { name: string; role: string }

/** Each binding's service, to read dependencies whose members are bindings. */
export const serviceOfBindings = (services: ServiceRow[]) => new Map(services.flatMap((s) => (s.bindings ?? []).map((b) => [b.id, s.id] as const)));

/** A dependency's member services in order, once each (a binding member stands for its service). */
export function memberServiceIds(d: DependencyRow, serviceOfBinding: Map<string, string>): string[] {
  return [...new Set(d.members?.type === 'Bindings'
    ? (d.members.binding_ids ?? []).map((b) => serviceOfBinding.get(b)).filter((x): x is string => !!x)
    : d.members?.service_ids ?? [])];
}

/** The role of a dependency's member at `index`: the hub and its spokes, or a step of a path. */
export const roleAt = (d: DependencyRow, index: number) => (d.dependency_type === 'HubAndSpoke' ? (index === 0 ? 'hub' : 'spoke') : `step ${index + 1}`);

/** By host id: the dependencies one of its services is a member of, with its role ("hub", "spoke", "step 2"). */
export function dependenciesByHost(dependencies: DependencyRow[], services: ServiceRow[]): Map<string, HostDependency[]> {
  const hostOf = new Map(services.map((s) => [s.id, s.host_id]));
  const serviceOfBinding = serviceOfBindings(services);
  const byHost = new Map<string, HostDependency[]>();
  for (const d of dependencies) {
    // A host with several members (a hub that is also a spoke) gets each role once.
    const roles = new Map<string, string[]>();
    memberServiceIds(d, serviceOfBinding).forEach((id, i) => {
      const host = hostOf.get(id);
      if (!host) return;
      const role = roleAt(d, i);
      const list = roles.get(host) ?? roles.set(host, []).get(host)!;
      if (!list.includes(role)) list.push(role);
    });
    for (const [host, list] of roles) (byHost.get(host) ?? byHost.set(host, []).get(host)!).push({ name: d.name, role: list.join(', ') });
  }
  return byHost;
}
