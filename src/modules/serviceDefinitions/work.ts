// The organization's enabled service definitions, carried to our agent with its Network discovery
// work (request-work for daemon_poll, /api/discovery/initiate for server_poll) as an extra field of
// the discovery type, `service_definitions`: agent/fingerprint/custom.ts reads it; Scanopy daemons
// ignore fields they do not know.
import type { Db } from '../../core/db.js';
import { MAX_DEFINITIONS } from './schemas.js';

export interface WorkDefinition {
  id: string;
  name: string;
  category: string;
  icon: string | null;
  ports: number[];
  probe: { type: 'banner' } | { type: 'http'; path: string };
  match: { field: string; pattern: string };
}

export async function enabledDefinitions(db: Db, organizationId: string): Promise<WorkDefinition[]> {
  return db.query<WorkDefinition>(
    `select id, name, category, icon, ports, probe, match from service_definitions where organization_id = ? and enabled order by created_at, id limit ?`,
    [organizationId, MAX_DEFINITIONS],
  );
}

/** A Network discovery type with the organization's enabled definitions added (unchanged when it has none, and for other types). */
export async function withServiceDefinitions<T>(db: Db, organizationId: string, discoveryType: T): Promise<T> {
  const dt = discoveryType as Record<string, unknown> | null;
  if (!dt || dt.type !== 'Network') return discoveryType;
  const definitions = await enabledDefinitions(db, organizationId);
  return definitions.length ? { ...dt, service_definitions: definitions } as T : discoveryType;
}
