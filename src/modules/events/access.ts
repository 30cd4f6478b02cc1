// Who may read the events of each kind of entity: whoever may read the entity itself, as its own
// `GET …/:id` route declares it (lowest role, session only, organization-wide);
// test/events/access.spec.ts checks that each entry agrees with that route, so the two cannot drift.
// One declaration for the feed's SQL, the stream's fan-out and the webhooks' dispatch (service.ts):
// an entity type missing here has events nobody reads (closed, not open).
import { hasRole, type Role, type Scope } from '../../core/scope.js';
import { maskSecrets } from '../../core/secretFields.js';

export interface EventReaders {
  /** The route that reads one entity of this kind (`GET /api/v1/hosts/:id`). */
  route: string;
  role: Role;
  sessionOnly?: boolean;
  organizationWide?: boolean;
  /** Fields holding a URL whose path or query may carry a secret (a chat webhook's): cut to their origin. */
  secretUrls?: string[];
}

export const EVENT_READERS: Readonly<Record<string, EventReaders>> = {
  network: { route: 'GET /api/v1/networks/:id', role: 'Viewer' },
  tag: { route: 'GET /api/v1/tags/:id', role: 'Viewer' },
  subnet: { route: 'GET /api/v1/subnets/:id', role: 'Viewer' },
  host: { route: 'GET /api/v1/hosts/:id', role: 'Viewer' },
  ip_address: { route: 'GET /api/v1/ip-addresses/:id', role: 'Viewer' },
  port: { route: 'GET /api/v1/ports/:id', role: 'Viewer' },
  service: { route: 'GET /api/v1/services/:id', role: 'Viewer' },
  binding: { route: 'GET /api/v1/bindings/:id', role: 'Viewer' },
  interface: { route: 'GET /api/v1/interfaces/:id', role: 'Viewer' },
  dependency: { route: 'GET /api/v1/dependencies/:id', role: 'Viewer' },
  daemon: { route: 'GET /api/v1/daemons/:id', role: 'Viewer' },
  webhook: { route: 'GET /api/v1/webhooks/:id', role: 'Admin', organizationWide: true, secretUrls: ['url'] },
};

/** The same three checks as a route's authorization (src/http/pipeline.ts authorize). */
function mayRead(scope: Scope, readers: EventReaders): boolean {
  return hasRole(scope, readers.role)
    && (!readers.sessionOnly || scope.kind === 'session')
    && (!readers.organizationWide || !scope.keyLimitedToNetworks);
}

/** The entity types whose events `scope` may read (networks apart). */
export function readableEntityTypes(scope: Scope): string[] {
  return Object.keys(EVENT_READERS).filter((type) => mayRead(scope, EVENT_READERS[type]!));
}

/** `url` without what may be a secret: scheme, host and port only. */
const originOf = (url: unknown) => {
  if (typeof url !== 'string') return url;
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
};

/**
 * An event's data (or its changes' pairs) with every credential field masked at any depth (a changed
 * credential reads as a change from the mask to the mask: "changed", never from what to what;
 * core/secretFields.ts) and the entity type's secret URLs cut to their origin.
 */
export function withoutSecrets<T extends Record<string, unknown>>(entityType: string, fields: T): T {
  const masked = maskSecrets(fields);
  const urls = EVENT_READERS[entityType]?.secretUrls;
  if (!urls) return masked;
  const out: Record<string, unknown> = { ...masked };
  for (const k of urls) {
    if (!(k in out)) continue;
    out[k] = Array.isArray(out[k]) ? (out[k] as unknown[]).map(originOf) : originOf(out[k]);
  }
  return out as T;
}
