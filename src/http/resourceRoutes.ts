// The six routes every history-bearing resource has (list, create, get, replace, delete, history),
// declared once, and PATCH where the resource says how to lock its row. A module states its path,
// schemas, roles and service; `extend` adds per-route specifics (a daemon variant, a longer summary).
import Joi from 'joi';
import type { Db } from '../core/db.js';
import type { Scope } from '../core/scope.js';
import type { Role } from '../core/scope.js';
import { validate, type ProtectedRoute, type RequestInput, type RouteDef } from './pipeline.js';
import { BULK_CREATE_BODY_LIMIT_BYTES, BULK_CREATE_MAX_ITEMS, bulkCreateBody, itemRefused } from './bulkCreate.js';
import { csvColumns, csvExport } from './csv.js';
import type { Page } from './envelope.js';
import { applyMergePatch, MERGE_PATCH_TYPES, mergePatchBody } from './mergePatch.js';
import { assertSameNetwork, at, idParams, readOnlyNetworkOf, uuid } from './schemas.js';

export interface ResourceService {
  list(db: Db, scope: Scope, query: Record<string, any>): Promise<unknown>;
  get(db: Db, scope: Scope, id: string, at?: string): Promise<unknown>;
  create(db: Db, scope: Scope, body: any): Promise<unknown>;
  update(db: Db, scope: Scope, id: string, body: any): Promise<unknown>;
  remove(db: Db, scope: Scope, id: string): Promise<unknown>;
  history(db: Db, scope: Scope, id: string): Promise<unknown>;
}

type BulkOperation = 'bulkDelete' | 'exportCsv' | 'bulkCreate';
type Operation = 'list' | 'create' | 'get' | 'update' | 'patch' | 'remove' | 'history' | BulkOperation;

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
  /**
   * Reads the resource's row locked until the transaction ends (404 / 403 as a get): given, the
   * resource also answers PATCH, whose read, merge and write then look like one write to the others.
   */
  lock?: (db: Db, scope: Scope, id: string) => Promise<unknown>;
  /** Also `POST path/bulk`: many creates in one request and one transaction (bulkCreateRoute). */
  bulkCreate?: boolean;
  extend?: Partial<Record<Operation, Partial<ProtectedRoute>>>;
}

export function resourceRoutes(r: ResourceDef): RouteDef[] {
  const { path, group, noun, service: s, schemas } = r;
  const [one, many] = r.entity;
  const item = `${path}/:id`;
  const fixedNetwork = readOnlyNetworkOf(schemas.update); // the update schema declares network_id read-only
  const routes: Record<Exclude<Operation, BulkOperation | 'patch'>, ProtectedRoute> = {
    list: {
      operationId: `list${many}`, method: 'get', path, group, auth: 'Viewer', paginated: true, readsTogether: true, summary: `List (as of \`at\`, when given)`,
      query: schemas.list, response: schemas.response,
      handler: ({ db, scope, query }) => s.list(db, scope, query),
    },
    create: {
      operationId: `create${one}`, method: 'post', path, group, auth: r.writeRole, status: 201, summary: `Create ${noun}`,
      body: schemas.create, response: schemas.response,
      handler: ({ db, scope, body }) => s.create(db, scope, body),
    },
    get: {
      operationId: `get${one}`, method: 'get', path: item, group, auth: 'Viewer', readsTogether: true, summary: `Get ${noun} (as of \`at\`, when given)`,
      params: idParams, query: Joi.object({ at: at() }), response: schemas.response,
      handler: ({ db, scope, params, query }) => s.get(db, scope, params.id, query.at),
    },
    update: {
      operationId: `update${one}`, method: 'put', path: item, group, auth: r.writeRole, summary: `Replace ${noun}`,
      params: idParams, body: schemas.update, response: schemas.response,
      handler: async ({ db, scope, params, body }) => {
        // A network_id sent must be the stored one (a resource's network never changes: read unlocked).
        if (fixedNetwork && body.network_id !== undefined) {
          assertSameNetwork((await s.get(db, scope, params.id) as { network_id: unknown }).network_id, body.network_id, fixedNetwork);
        }
        return s.update(db, scope, params.id, body);
      },
    },
    remove: {
      operationId: `delete${one}`, method: 'delete', path: item, group, auth: r.writeRole, summary: `Delete ${noun}`, params: idParams,
      handler: ({ db, scope, params }) => s.remove(db, scope, params.id),
    },
    history: {
      operationId: `get${one}History`, method: 'get', path: `${item}/history`, group, auth: 'Viewer', readsTogether: true, summary: `Every state of ${noun}, newest first`, list: true,
      params: idParams, response: schemas.response,
      handler: ({ db, scope, params }) => s.history(db, scope, params.id),
    },
  };
  if (r.organizationWide) for (const op of ['create', 'update', 'remove'] as const) routes[op].organizationWide = true;
  const declared = (Object.keys(routes) as Array<keyof typeof routes>).map((op) => ({ ...routes[op], ...r.extend?.[op] }) as RouteDef);
  if (r.lock) {
    const patch = patchRoute({ ...r, lock: r.lock, get: (db, scope, id) => s.get(db, scope, id), update: (db, scope, id, body) => s.update(db, scope, id, body) });
    declared.splice(declared.findIndex((d) => d.operationId === `update${one}`) + 1, 0, { ...patch, ...r.extend?.patch } as RouteDef);
  }
  const [bulkDelete, exportCsv] = bulkRoutes(declared, { ...r, list: (db, scope, q) => s.list(db, scope, q), remove: (db, scope, id) => s.remove(db, scope, id) });
  const bulkCreate = r.bulkCreate ? [{ ...bulkCreateRoute(declared, r), ...r.extend?.bulkCreate }] : [];
  return [...declared, { ...bulkDelete, ...r.extend?.bulkDelete }, { ...exportCsv, ...r.extend?.exportCsv }, ...bulkCreate] as RouteDef[];
}

interface PatchDef {
  path: string;
  group: string;
  entity: [string, string];
  noun: string;
  schemas: { update: Joi.Schema; response: Joi.Schema };
  writeRole: Role;
  organizationWide?: boolean;
  lock: (db: Db, scope: Scope, id: string) => Promise<unknown>;
  get: (db: Db, scope: Scope, id: string) => Promise<unknown>;
  update: (db: Db, scope: Scope, id: string, body: any) => Promise<unknown>;
  /**
   * Fields the update leaves as they are when not sent (a host's ip_addresses, ports, services):
   * a patch without them omits them, so the update does not rewrite the same lists.
   */
  keptUnlessSent?: string[];
}

/**
 * `PATCH path/:id` with a JSON merge patch (RFC 7396): in one transaction the resource is read
 * locked, the patch merged into it, the result validated by the update schema (a field that is
 * required stays required: `"name": null` is 400) and written by the resource's own update, so a
 * PATCH keeps its rules, its history state and `expected_updated_at` (409 when stale).
 */
export function patchRoute(r: PatchDef): ProtectedRoute {
  const update = r.schemas.update;
  if (update.type !== 'object') throw new Error(`patchRoute: the update schema of ${r.path} is not an object`);
  // Only the fields a PUT takes are carried over from the read (not updated_at, source…).
  const writable = new Set(Object.keys((update.describe().keys ?? {}) as object));
  const fixedNetwork = readOnlyNetworkOf(update);
  return {
    operationId: `patch${r.entity[0]}`, method: 'patch', path: `${r.path}/:id`, group: r.group, auth: r.writeRole, organizationWide: r.organizationWide,
    summary: `Change some fields of ${r.noun} (JSON merge patch, RFC 7396: fields left out are kept; \`expected_updated_at\` as for PUT)`,
    params: idParams, body: mergePatchBody(update as Joi.ObjectSchema), consumes: MERGE_PATCH_TYPES, response: r.schemas.response,
    handler: ({ db, scope, params, body }) => db.transaction(async (tx) => {
      await r.lock(tx, scope, params.id);
      const current = await r.get(tx, scope, params.id) as Record<string, unknown>;
      const base = Object.fromEntries(Object.entries(current)
        .filter(([key]) => writable.has(key) && !(r.keptUnlessSent?.includes(key) && !(key in body))));
      const merged = validate(update, applyMergePatch(base, body), 'body');
      if (fixedNetwork) assertSameNetwork(current.network_id, merged.network_id, fixedNetwork);
      return r.update(tx, scope, params.id, merged);
    }),
  };
}

/** `POST …/bulk-delete` takes `{ids}` or (as Scanopy's clients send) the bare list. */
export const bulkDeleteBody = Joi.alternatives(
  Joi.object({ ids: Joi.array().items(uuid()).min(1).max(1000).unique().required() }),
  Joi.array().items(uuid()).min(1).max(1000).unique(),
).example({ ids: ['3f1c2a9e-7b1d-4c55-9a7e-0c1d2e3f4a5b'] });
export const bulkDeleteResponse = Joi.object({ deleted_count: Joi.number().integer(), requested_count: Joi.number().integer() }).label('BulkDeleteResult');

interface BulkDef {
  path: string;
  group: string;
  entity: [string, string];
  schemas: { list: Joi.ObjectSchema; response: Joi.Schema };
  list: (db: Db, scope: Scope, query: Record<string, any>) => Promise<unknown>;
  /** The resource's delete of one id (the request, for after-commit work such as telling the pollers). */
  remove: (db: Db, scope: Scope, id: string, req: RequestInput<Scope>) => Promise<unknown>;
}

/** Who may call a route: what `authorize` (src/http/pipeline.ts) reads of its declaration. */
export const accessOf = (route: ProtectedRoute) => ({ auth: route.auth, sessionOnly: route.sessionOnly, organizationWide: route.organizationWide });

/** The resource's own route `method path` among `declared`: the one a bulk route stands for. */
export function declaredRoute(declared: RouteDef[], method: string, path: string): ProtectedRoute {
  const route = declared.find((d) => d.method === method && d.path === path);
  if (!route || route.auth === 'public' || route.auth === 'daemon') throw new Error(`bulkRoutes: no protected route ${method.toUpperCase()} ${path} declared before its bulk routes`);
  return route;
}

/**
 * Bulk delete and CSV export of a resource, from its own delete and list, which it declared
 * before (`declared`). Each takes who may call it (role, session only, organization-wide) from
 * that route, so an export can never show what the list refuses. A bulk delete is one
 * transaction of the resource's deletes: each keeps its rules and its history state, and the first
 * id that is unknown (another organization's looks the same: 404) or out of reach (403) or refused
 * by a rule undoes them all.
 */
export function bulkRoutes(declared: RouteDef[], r: BulkDef): [bulkDelete: ProtectedRoute, exportCsv: ProtectedRoute] {
  const [, many] = r.entity;
  const noun = r.group.toLowerCase();
  return [
    {
      operationId: `bulkDelete${many}`, method: 'post', path: `${r.path}/bulk-delete`, group: r.group, ...accessOf(declaredRoute(declared, 'delete', `${r.path}/:id`)),
      summary: `Delete the listed ${noun}, all or none (an unknown id is 404, one out of reach 403, and nothing is deleted)`,
      body: bulkDeleteBody, response: bulkDeleteResponse,
      handler: (req) => {
        const { db, scope, body } = req;
        const ids: string[] = Array.isArray(body) ? body : body.ids;
        return db.transaction(async (tx) => {
          for (const id of ids) await r.remove(tx, scope, id, { ...req, db: tx });
          return { deleted_count: ids.length, requested_count: ids.length };
        });
      },
    },
    {
      operationId: `export${many}Csv`, method: 'get', path: `${r.path}/export/csv`, group: r.group, ...accessOf(declaredRoute(declared, 'get', r.path)),
      summary: `The ${noun} as CSV (RFC 4180), with the list's filters; streamed`, produces: ['text/csv'], query: r.schemas.list.keys({ limit: Joi.any().strip(), offset: Joi.any().strip() }), // the whole list, in pages
      handler: ({ db, scope, query }) => csvExport(`${many.replace(/([a-z])([A-Z])/g, '$1-$2').toLowerCase()}.csv`, csvColumns(r.schemas.response),
        (offset, limit) => r.list(db, scope, { ...query, offset, limit }) as Promise<Page<Record<string, unknown>>>),
    },
  ];
}

/**
 * `POST path/bulk`: a JSON array of up to 1,000 create bodies, each validated by the resource's
 * declared create route's schema (every failing item reported by index before anything is written)
 * and written by that route's own handler, in order, in one transaction: a refused item undoes them
 * all and names its index. Who may call it (role, session only, organization-wide) is the create's;
 * a daemon variant of the create is not carried over (bulk create is for users).
 */
export function bulkCreateRoute(declared: RouteDef[], r: {
  path: string; group: string; entity: [string, string];
  /** The resource's own create of many, set-based (hosts); by default the create route's handler runs per item. */
  createMany?: (db: Db, scope: Scope, bodies: any[]) => Promise<unknown[]>;
}): ProtectedRoute {
  const create = declaredRoute(declared, 'post', r.path);
  if (!create.body || !create.response) throw new Error(`bulkCreateRoute: POST ${r.path} declares no body or response schema`);
  return {
    operationId: `bulkCreate${r.entity[1]}`, method: 'post', path: `${r.path}/bulk`, group: r.group, ...accessOf(create), status: 201,
    summary: `Create up to ${BULK_CREATE_MAX_ITEMS} ${r.group.toLowerCase()} in one transaction, all or none (each as \`${create.operationId}\` would; a refused item is named by its index in \`params.errors\` and nothing is stored). One request for the rate limit; bodies up to ${BULK_CREATE_BODY_LIMIT_BYTES / 1024 / 1024} MiB`,
    body: bulkCreateBody(create.body), bodyLimit: BULK_CREATE_BODY_LIMIT_BYTES,
    response: Joi.object({ items: Joi.array().items(create.response), count: Joi.number().integer() }).label(`BulkCreate${r.entity[1]}Result`),
    handler: (req) => req.db.transaction(async (tx) => {
      if (r.createMany) {
        const items = await r.createMany(tx, req.scope, req.body);
        return { items, count: items.length };
      }
      const items: unknown[] = [];
      for (const [index, body] of (req.body as unknown[]).entries()) {
        try {
          items.push(await create.handler({ ...req, db: tx, body }));
        } catch (err) {
          throw itemRefused(index, err);
        }
      }
      return { items, count: items.length };
    }),
  };
}
