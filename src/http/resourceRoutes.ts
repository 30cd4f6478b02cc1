// The six routes every history-bearing resource has (list, create, get, replace, delete, history),
// declared once. A module states its path, schemas, roles and service; `extend` adds per-route
// specifics (a daemon variant, a longer summary).
import Joi from 'joi';
import type { Db } from '../core/db.js';
import type { Scope } from '../core/scope.js';
import type { Role } from '../core/scope.js';
import type { ProtectedRoute, RouteDef } from './pipeline.js';
import { at, idParams } from './schemas.js';

export interface ResourceService {
  list(db: Db, scope: Scope, query: Record<string, any>): Promise<unknown>;
  get(db: Db, scope: Scope, id: string, at?: string): Promise<unknown>;
  create(db: Db, scope: Scope, body: any): Promise<unknown>;
  update(db: Db, scope: Scope, id: string, body: any): Promise<unknown>;
  remove(db: Db, scope: Scope, id: string): Promise<unknown>;
  history(db: Db, scope: Scope, id: string): Promise<unknown>;
}

type Operation = 'list' | 'create' | 'get' | 'update' | 'remove' | 'history';

export interface ResourceDef {
  /** Collection path, e.g. `/api/v1/ports`. */
  path: string;
  /** OpenAPI group, e.g. `Ports`. */
  group: string;
  /** Singular and plural entity names for operation ids: `['Port', 'Ports']` → listPorts, getPort… */
  entity: [string, string];
  /** "a port": used in the default summaries. */
  noun: string;
  service: ResourceService;
  schemas: { list: Joi.ObjectSchema; create: Joi.Schema; update: Joi.Schema; response: Joi.Schema };
  /** Reads are Viewer; writes need this role (Member for inventory, Admin for tags and networks). */
  writeRole: Role;
  /** Writes change the whole organization (tags, networks): refused to network-limited keys. */
  organizationWide?: boolean;
  extend?: Partial<Record<Operation, Partial<ProtectedRoute>>>;
}

export function resourceRoutes(r: ResourceDef): RouteDef[] {
  const { path, group, noun, service: s, schemas } = r;
  const [one, many] = r.entity;
  const item = `${path}/:id`;
  const routes: Record<Operation, ProtectedRoute> = {
    list: {
      operationId: `list${many}`, method: 'get', path, group, auth: 'Viewer', paginated: true, summary: `List (as of \`at\`, when given)`,
      query: schemas.list, response: schemas.response,
      handler: ({ db, scope, query }) => s.list(db, scope, query),
    },
    create: {
      operationId: `create${one}`, method: 'post', path, group, auth: r.writeRole, status: 201, summary: `Create ${noun}`,
      body: schemas.create, response: schemas.response,
      handler: ({ db, scope, body }) => s.create(db, scope, body),
    },
    get: {
      operationId: `get${one}`, method: 'get', path: item, group, auth: 'Viewer', summary: `Get ${noun} (as of \`at\`, when given)`,
      params: idParams, query: Joi.object({ at: at() }), response: schemas.response,
      handler: ({ db, scope, params, query }) => s.get(db, scope, params.id, query.at),
    },
    update: {
      operationId: `update${one}`, method: 'put', path: item, group, auth: r.writeRole, summary: `Replace ${noun}`,
      params: idParams, body: schemas.update, response: schemas.response,
      handler: ({ db, scope, params, body }) => s.update(db, scope, params.id, body),
    },
    remove: {
      operationId: `delete${one}`, method: 'delete', path: item, group, auth: r.writeRole, summary: `Delete ${noun}`, params: idParams,
      handler: ({ db, scope, params }) => s.remove(db, scope, params.id),
    },
    history: {
      operationId: `get${one}History`, method: 'get', path: `${item}/history`, group, auth: 'Viewer', summary: `Every state of ${noun}, newest first`, list: true,
      params: idParams, response: schemas.response,
      handler: ({ db, scope, params }) => s.history(db, scope, params.id),
    },
  };
  if (r.organizationWide) for (const op of ['create', 'update', 'remove'] as const) routes[op].organizationWide = true;
  return (Object.keys(routes) as Operation[]).map((op) => ({ ...routes[op], ...r.extend?.[op] }) as RouteDef);
}
