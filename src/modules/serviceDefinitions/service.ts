// Custom service definitions: per organization, read by every member, written by Admins
// and Owners; the enabled ones go to our agent with its Network discovery work (work.ts). Settings,
// not inventory: plain rows (no history, no events), as webhooks.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../core/db.js';
import { alreadyExists, notFound } from '../../core/errors.js';
import { isoTimestamp, type Row } from '../../core/historyTable.js';
import type { Scope } from '../../core/scope.js';
import { Page } from '../../http/envelope.js';
import { assertSameId } from '../../http/schemas.js';

export interface ServiceDefinitionInput {
  id?: string;
  name: string;
  category: string;
  icon: string | null;
  ports: number[];
  probe: { type: 'banner' } | { type: 'http'; path: string };
  match: { field: string; pattern: string };
  enabled: boolean;
}

const COLUMNS = 'id, organization_id, name, category, icon, ports, probe, match, enabled, created_at, updated_at';

const toResponse = (row: Row): Row => ({ ...row, created_at: isoTimestamp(row.created_at), updated_at: isoTimestamp(row.updated_at) });

/** A name taken in the organization is 409 entity_already_exists. */
async function write<T>(name: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if ((err as { code?: string }).code === '23505') throw alreadyExists('ServiceDefinition', 'name', name);
    throw err;
  }
}

export const serviceDefinitionService = {
  async list(db: Db, scope: Scope, q: { limit: number; offset: number; ids?: string[]; enabled?: boolean }) {
    const where = ['organization_id = ?'];
    const params: unknown[] = [scope.organizationId];
    if (q.ids) {
      where.push('id = any(?::uuid[])');
      params.push(q.ids);
    }
    if (q.enabled !== undefined) {
      where.push('enabled = ?');
      params.push(q.enabled);
    }
    const [rows, count] = await Promise.all([
      db.query(`select ${COLUMNS} from service_definitions where ${where.join(' and ')} order by created_at, id${q.limit ? ' limit ?' : ''} offset ?`,
        [...params, ...(q.limit ? [q.limit] : []), q.offset]),
      db.one<{ n: string }>(`select count(*) as n from service_definitions where ${where.join(' and ')}`, params),
    ]);
    return Page.of(rows.map(toResponse), Number(count!.n), q.limit, q.offset);
  },

  async get(db: Db, scope: Scope, id: string) {
    const row = await db.one(`select ${COLUMNS} from service_definitions where organization_id = ? and id = ?`, [scope.organizationId, id]);
    if (!row) throw notFound('ServiceDefinition', id);
    return toResponse(row);
  },

  async create(db: Db, scope: Scope, input: ServiceDefinitionInput) {
    const row = await write(input.name, () => db.one(
      `insert into service_definitions (id, organization_id, name, category, icon, ports, probe, match, enabled)
       values (?, ?, ?, ?, ?, ?::integer[], ?::jsonb, ?::jsonb, ?) returning ${COLUMNS}`,
      [randomUUID(), scope.organizationId, input.name, input.category, input.icon, input.ports, JSON.stringify(input.probe), JSON.stringify(input.match), input.enabled],
    ));
    return toResponse(row!);
  },

  async update(db: Db, scope: Scope, id: string, input: ServiceDefinitionInput) {
    assertSameId(id, input.id);
    const row = await write(input.name, () => db.one(
      `update service_definitions set name = ?, category = ?, icon = ?, ports = ?::integer[], probe = ?::jsonb, match = ?::jsonb, enabled = ?, updated_at = now()
       where organization_id = ? and id = ? returning ${COLUMNS}`,
      [input.name, input.category, input.icon, input.ports, JSON.stringify(input.probe), JSON.stringify(input.match), input.enabled, scope.organizationId, id],
    ));
    if (!row) throw notFound('ServiceDefinition', id);
    return toResponse(row);
  },

  async remove(db: Db, scope: Scope, id: string) {
    const row = await db.one(`delete from service_definitions where organization_id = ? and id = ? returning id`, [scope.organizationId, id]);
    if (!row) throw notFound('ServiceDefinition', id);
    return null;
  },
};
