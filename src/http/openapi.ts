// The OpenAPI 3.1 document, generated from the same route declarations and joi schemas that
// validate requests (Swagger UI draws it at /api/docs: src/http/apiDocs.ts).
import Joi from 'joi';
import joiToJson from 'joi-to-json';
import { ERROR_CODES } from '../core/errors.js';
import type { AppConfig } from '../config.js';
import { exampleOf, PARAMETER_DESCRIPTIONS } from './openapiExamples.js';
import type { RouteDef } from './pipeline.js';

type Json = Record<string, any>;
const convert = joiToJson as unknown as (s: { describe(): Json }, t: string, definitions: Json) => Json;

/**
 * Joi's description, made into what a client generator needs: in a response, every object with a
 * `.label()` becomes a named component (`$ref`) and every key is required unless marked `.optional()`
 * (a response sends all its fields, null when empty); an address field is IPv4 or IPv6, a `cidr`
 * field either family's CIDR.
 */
function prepare(node: unknown, response: boolean): unknown {
  if (Array.isArray(node)) return node.map((n) => prepare(n, response));
  if (!node || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) out[k] = prepare(v, response);
  if (typeof out.type === 'string') {
    // A request body's accepted-and-ignored keys (server-owned, Scanopy's extras) are listed, not typed "anything".
    if (!response && out.type === 'object' && out.keys) {
      const ignored = Object.keys(out.keys).filter((k) => out.keys[k].type === 'any' && out.keys[k].flags?.result === 'strip');
      if (ignored.length) {
        out.keys = Object.fromEntries(Object.entries(out.keys).filter(([k]) => !ignored.includes(k)));
        const note = `Accepted and ignored (read-only or not modelled): ${ignored.join(', ')}.`;
        out.flags = { ...out.flags, description: out.flags?.description ? `${out.flags.description} ${note}` : note };
      }
    }
    if (response && out.type === 'object' && out.flags?.label) out.flags = { ...out.flags, id: String(out.flags.label).replace(/[^A-Za-z0-9]/g, '') };
    // `.pattern(Joi.string(), X)` (a map): every key, typed X.
    if (out.type === 'object' && Array.isArray(out.patterns)) {
      out.patterns = out.patterns.map((p: Json) => (p.schema && !p.regex ? { regex: '/^.*$/', rule: p.rule } : p));
    }
    if (Array.isArray(out.rules)) {
      out.rules = out.rules.flatMap((rule: Json) => {
        if (rule.name !== 'ip') return [rule];
        if (rule.args?.options?.cidr === 'required') {
          out.flags = { description: 'An IPv4 or IPv6 network in CIDR notation', ...out.flags };
          return [{ name: 'pattern', args: { regex: String(CIDR) } }];
        }
        return [{ ...rule, args: { ...rule.args, options: { ...rule.args?.options, version: ['ipv4', 'ipv6'] } } }];
      });
    }
  }
  return out;
}
const CIDR = /^(\d{1,3}(\.\d{1,3}){3}\/\d{1,2}|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*\/\d{1,3})$/;

/** joi-to-json lists a map's key pattern (`/^.*$/`) as a property too: only patternProperties is meant. */
function dropPatternKeys(node: unknown): void {
  if (!node || typeof node !== 'object') return;
  const n = node as Json;
  if (n.patternProperties && n.properties) {
    for (const key of Object.keys(n.properties)) {
      if (key.startsWith('/')) {
        delete n.properties[key];
        if (Array.isArray(n.required)) n.required = n.required.filter((k: string) => k !== key);
      }
    }
  }
  for (const v of Object.values(n)) dropPatternKeys(v);
}

/** Converts joi schemas, collecting every named component into one map (a name with two shapes is an error). */
class SchemaSet {
  readonly components: Json = {};
  convert(schema: Joi.Schema, response = false): Json {
    let description = prepare(schema.describe(), response) as Json;
    if (response) description = { ...description, preferences: { ...description.preferences, presence: 'required' } };
    const definitions: Json = {};
    const json = convert({ describe: () => description }, 'open-api-3.1', definitions);
    delete json.components;
    if (json.$ref) for (const key of Object.keys(json)) if (key !== '$ref') delete json[key]; // the definitions joi-to-json hangs on a named root
    for (const def of [json, ...Object.values(definitions)]) dropPatternKeys(def);
    for (const [name, def] of Object.entries(definitions)) {
      const known = this.components[name];
      if (known && JSON.stringify(known) !== JSON.stringify(def)) throw new Error(`OpenAPI: two different schemas are named ${name}`);
      this.components[name] = def;
    }
    return json;
  }
  parameters(schema: Joi.ObjectSchema | undefined, where: 'path' | 'query') {
    if (!schema) return [];
    const json = this.convert(schema) as { properties?: Json; required?: string[] };
    return Object.entries(json.properties ?? {}).map(([name, s]) => ({
      name, in: where, required: where === 'path' || (json.required ?? []).includes(name), schema: s,
      ...(s.description ? { description: s.description } : {}),
      ...(s.examples?.length ? { example: s.examples[0] } : {}),
    }));
  }
}

const meta = {
  type: 'object',
  properties: { api_version: { type: 'integer' }, server_version: { type: 'string' } },
  required: ['api_version', 'server_version'],
};

const STATUS_TEXT: Record<number, string> = {
  400: 'Invalid request', 401: 'Not authenticated', 403: 'Not allowed', 404: 'Not found', 409: 'Conflict',
  410: 'Gone', 413: 'Body too large', 415: 'Unsupported body', 422: 'Unprocessable', 429: 'Rate limited', 503: 'Unavailable',
};
const codesWith = (status: number) => Object.entries(ERROR_CODES).filter(([, e]) => e.status === status).map(([code]) => code);

/** The error statuses a route can answer, from what it declares (auth, params, body, method). */
function errorStatuses(r: RouteDef): number[] {
  // Any request may carry a body the envelope refuses (malformed, too large, an unknown encoding).
  const statuses = new Set<number>([400, 413, 415]);
  if (r.auth !== 'public' || r.limitByAddress) statuses.add(401).add(403);
  if (r.method !== 'get') statuses.add(403); // a write from another origin
  if (r.params || r.query || r.method !== 'get') statuses.add(404);
  if (r.method !== 'get' && r.auth !== 'public') statuses.add(409);
  if (r.status === 201 && r.auth !== 'public' && r.auth !== 'daemon') statuses.add(422);
  if (!r.unlimited) statuses.add(429);
  for (const status of r.errors ?? []) statuses.add(status);
  return [...statuses].sort();
}

/** An example on every request body and parameter, and a description on every parameter. */
function addExamples(paths: Record<string, Record<string, unknown>>, components: Json): void {
  for (const ops of Object.values(paths)) {
    for (const op of Object.values(ops) as Json[]) {
      const media = op.requestBody?.content?.['application/json'];
      if (media && media.example === undefined) media.example = exampleOf(media.schema, components);
      for (const p of op.parameters as Json[]) {
        p.description ??= PARAMETER_DESCRIPTIONS[p.name] ?? `The ${p.name.replace(/_/g, ' ')}`;
        // Only required parameters get an example: Swagger UI fills examples into "Try it out",
        // and an optional filter filled in (an `at` instant) would change what the call answers.
        if (p.example === undefined && p.required) {
          const example = exampleOf(p.schema, components, p.name);
          if (example !== undefined) p.example = example;
        }
      }
    }
  }
}

export function buildOpenApi(routes: RouteDef[], config: AppConfig) {
  const schemas = new SchemaSet();
  const paths: Record<string, Record<string, unknown>> = {};
  const operationIds = new Set<string>();
  const errorResponses: Json = {};
  for (const r of routes) {
    if (operationIds.has(r.operationId)) throw new Error(`OpenAPI: operationId ${r.operationId} used twice`);
    operationIds.add(r.operationId);
    const path = r.path.replace(/:(\w+)/g, '{$1}');
    const data = r.response ? schemas.convert(r.response, true) : {};
    const metaWith = (key: string, schema: string) => ({ allOf: [{ $ref: '#/components/schemas/Meta' }, { type: 'object', properties: { [key]: { $ref: `#/components/schemas/${schema}` } }, required: [key] }] });
    const success = {
      type: 'object',
      properties: {
        success: { const: true },
        data: r.paginated || r.list || r.cursorPaged ? { type: 'array', items: data } : data,
        meta: r.paginated ? metaWith('pagination', 'Pagination') : r.cursorPaged ? metaWith('cursor', 'Cursor') : { $ref: '#/components/schemas/Meta' },
      },
      required: ['success', 'data', 'meta'],
    };
    const content = r.produces
      ? Object.fromEntries(r.produces.map((type) => [type, { schema: { type: 'string' } }]))
      : { 'application/json': { schema: success } };
    // A user route that daemons call too (Scanopy daemons post subnets to user routes) documents
    // what a daemon sends and gets: OpenAPI has no per-scheme body, hence the extension.
    const daemon = 'daemon' in r && typeof r.daemon === 'object' ? r.daemon : undefined;
    const statuses = errorStatuses(r);
    const errors = Object.fromEntries(statuses.map((status) => [String(status), { $ref: `#/components/responses/Error${status}` }]));
    for (const status of statuses) {
      errorResponses[`Error${status}`] ??= {
        description: `${STATUS_TEXT[status] ?? 'Error'}: code ${codesWith(status).map((c) => `\`${c}\``).join(', ')}`,
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      };
    }
    paths[path] ??= {};
    paths[path][r.method] = {
      operationId: r.operationId,
      summary: r.summary,
      tags: [r.group],
      security: r.auth === 'public' ? [] : r.auth === 'daemon' ? [{ daemon: [] }]
        : 'sessionOnly' in r && r.sessionOnly ? [{ session: [] }]
          : [{ bearer: [] }, { session: [] }, ...(daemon ? [{ daemon: [] }] : [])],
      'x-daemon-variant': daemon ? {
        description: 'Called with a daemon key (scp_d_… and X-Daemon-ID), the route takes this body and answers this status, in the daemon protocol\'s vocabulary.',
        status: daemon.status ?? r.status ?? 200,
        requestBody: daemon.body ? schemas.convert(daemon.body) : undefined,
        parameters: daemon.query ? schemas.parameters(daemon.query, 'query') : undefined,
      } : undefined,
      'x-required-role': r.auth === 'public' ? undefined : r.auth,
      parameters: [
        ...schemas.parameters(r.params, 'path'), ...schemas.parameters(r.query, 'query'),
        ...(r.status === 201 && r.auth !== 'public' && r.auth !== 'daemon' ? [IDEMPOTENCY_PARAMETER] : []),
      ],
      requestBody: r.body ? { required: true, content: mediaTypes(r.consumes ?? ['application/json'], schemas.convert(r.body)) } : undefined,
      responses: {
        [String(r.status ?? 200)]: { description: 'Success', content },
        ...errors,
      },
    };
  }
  addExamples(paths, schemas.components);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Network inventory API',
      version: config.serverVersion,
      description: 'Rate limit: 300 requests per minute per user, burst 150 (X-RateLimit-* headers; 429 with Retry-After).',
    },
    paths,
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'User API key `scp_u_…`' },
        session: { type: 'apiKey', in: 'cookie', name: 'session_id' },
        daemon: { type: 'http', scheme: 'bearer', description: 'Daemon API key `scp_d_…`, with the `X-Daemon-ID` header' },
      },
      responses: errorResponses,
      schemas: {
        ...schemas.components,
        Meta: meta,
        Cursor: {
          type: 'object',
          description: 'Where a feed read stands: pass `next` as the next `after`',
          properties: { after: { type: 'string' }, next: { type: 'string' }, has_more: { type: 'boolean' } },
          required: ['after', 'next', 'has_more'],
        },
        Pagination: {
          type: 'object',
          properties: { total_count: { type: 'integer' }, limit: { type: 'integer' }, offset: { type: 'integer' }, has_more: { type: 'boolean' } },
          required: ['total_count', 'limit', 'offset', 'has_more'],
        },
        Error: {
          type: 'object',
          properties: {
            success: { const: false },
            error: { type: 'string' },
            code: { type: 'string', enum: Object.keys(ERROR_CODES) },
            params: { type: 'object' },
            meta: { $ref: '#/components/schemas/Meta' },
          },
          required: ['success', 'error', 'code', 'meta'],
          'x-error-codes': Object.fromEntries(Object.entries(ERROR_CODES).map(([code, e]) => [code, e.status])),
        },
      },
    },
  };
}

/** One schema under each media type a body may have (a PATCH: merge patch, or plain JSON). */
const mediaTypes = (types: string[], schema: Json) => Object.fromEntries(types.map((type) => [type, { schema }]));

/** Creates accept it (src/core/idempotency.ts). */
const IDEMPOTENCY_PARAMETER = {
  name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', minLength: 1, maxLength: 255 },
  description: 'Any unique string (a UUID): a retry with the same key within 24 hours answers the first answer (header `Idempotent-Replayed: true`) and creates nothing more; the same key with another request is 422 `idempotency_key_reused`.',
};
