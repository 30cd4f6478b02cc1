// The OpenAPI 3.1 document, generated from the same route declarations and joi schemas that
// validate requests, and a readable HTML page of it (no external assets).
import Joi from 'joi';
import joiToJson from 'joi-to-json';
import { ERROR_CODES } from '../core/errors.js';
import type { AppConfig } from '../config.js';
import type { RouteDef } from './pipeline.js';

const toSchema = (schema: Joi.Schema) => (joiToJson as unknown as (s: Joi.Schema, t: string) => Record<string, unknown>)(schema, 'open-api-3.1');

function parameters(schema: Joi.ObjectSchema | undefined, where: 'path' | 'query') {
  if (!schema) return [];
  const json = toSchema(schema) as { properties?: Record<string, unknown>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, s]) => ({
    name, in: where, required: where === 'path' || (json.required ?? []).includes(name), schema: s,
  }));
}

const meta = {
  type: 'object',
  properties: { api_version: { type: 'integer' }, server_version: { type: 'string' } },
  required: ['api_version', 'server_version'],
};

export function buildOpenApi(routes: RouteDef[], config: AppConfig) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const path = r.path.replace(/:(\w+)/g, '{$1}');
    const data = r.response ? toSchema(r.response) : {};
    const success = {
      type: 'object',
      properties: {
        success: { const: true },
        data: r.paginated ? { type: 'array', items: data } : data,
        meta: r.paginated ? { allOf: [meta, { properties: { pagination: { $ref: '#/components/schemas/Pagination' } } }] } : meta,
      },
    };
    // A user route that daemons call too (Scanopy daemons post subnets to user routes) documents
    // what a daemon sends and gets: OpenAPI has no per-scheme body, hence the extension.
    const daemon = 'daemon' in r && typeof r.daemon === 'object' ? r.daemon : undefined;
    paths[path] ??= {};
    paths[path][r.method] = {
      summary: r.summary,
      tags: [r.group],
      security: r.auth === 'public' ? [] : r.auth === 'daemon' ? [{ daemon: [] }]
        : 'sessionOnly' in r && r.sessionOnly ? [{ session: [] }]
          : [{ bearer: [] }, { session: [] }, ...(daemon ? [{ daemon: [] }] : [])],
      'x-daemon-variant': daemon ? {
        description: 'Called with a daemon key (scp_d_… and X-Daemon-ID), the route takes this body and answers this status, in the daemon protocol\'s vocabulary.',
        status: daemon.status ?? r.status ?? 200,
        requestBody: daemon.body ? toSchema(daemon.body) : undefined,
        parameters: daemon.query ? parameters(daemon.query, 'query') : undefined,
      } : undefined,
      'x-required-role': r.auth === 'public' ? undefined : r.auth,
      parameters: [
        ...parameters(r.params, 'path'), ...parameters(r.query, 'query'),
        ...(r.status === 201 && r.auth !== 'public' && r.auth !== 'daemon' ? [IDEMPOTENCY_PARAMETER] : []),
      ],
      requestBody: r.body ? { required: true, content: { 'application/json': { schema: toSchema(r.body) } } } : undefined,
      responses: {
        [String(r.status ?? 200)]: { description: 'Success', content: { 'application/json': { schema: success } } },
        default: { description: 'Error (see the codes in components.schemas.Error)', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
      },
    };
  }
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
      schemas: {
        Pagination: {
          type: 'object',
          properties: { total_count: { type: 'integer' }, limit: { type: 'integer' }, offset: { type: 'integer' }, has_more: { type: 'boolean' } },
        },
        Error: {
          type: 'object',
          properties: {
            success: { const: false },
            error: { type: 'string' },
            code: { type: 'string', enum: Object.keys(ERROR_CODES) },
            params: { type: 'object' },
            meta,
          },
          required: ['success', 'error', 'meta'],
          'x-error-codes': Object.fromEntries(Object.entries(ERROR_CODES).map(([code, e]) => [code, e.status])),
        },
      },
    },
  };
}

/** Creates accept it (src/core/idempotency.ts). */
const IDEMPOTENCY_PARAMETER = {
  name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', minLength: 1, maxLength: 255 },
  description: 'Any unique string (a UUID): a retry with the same key within 24 hours answers the first answer (header `Idempotent-Replayed: true`) and creates nothing more; the same key with another request is 422 `idempotency_key_reused`.',
};

const escape = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

/** A plain page listing every endpoint with its role and schemas; the JSON is one click away. */
export function renderDocsPage(doc: ReturnType<typeof buildOpenApi>): string {
  const rows = Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => {
      const o = op as { summary: string; tags: string[]; 'x-required-role'?: string; parameters: unknown[]; requestBody?: unknown };
      const detail = JSON.stringify({ parameters: o.parameters, requestBody: o.requestBody }, null, 2);
      return `<details><summary><code class="m ${method}">${method.toUpperCase()}</code> <code>${escape(path)}</code> — ${escape(o.summary)}
<small>${escape(o.tags.join(', '))} · ${escape(o['x-required-role'] ?? 'public')}</small></summary><pre>${escape(detail)}</pre></details>`;
    }),
  );
  const codes = Object.entries(ERROR_CODES).map(([c, e]) => `<tr><td><code>${c}</code></td><td>${e.status}</td></tr>`).join('');
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escape(doc.info.title)}</title>
<style>body{font:15px system-ui,sans-serif;max-width:960px;margin:2rem auto;padding:0 1rem}summary{cursor:pointer;padding:.3rem 0}
pre{background:#f5f5f5;padding:.6rem;overflow:auto}.m{display:inline-block;width:4.2rem;font-weight:bold}.get{color:#0a6}.post{color:#06c}
.put{color:#a60}.delete{color:#c22}small{color:#777;margin-left:.5rem}td{padding:.1rem .8rem}</style></head><body>
<h1>${escape(doc.info.title)} <small>${escape(doc.info.version)}</small></h1><p>${escape(doc.info.description)}</p>
<p>Machine-readable: <a href="/api/openapi.json">/api/openapi.json</a> (OpenAPI 3.1)</p>${rows.join('\n')}
<h2>Error codes</h2><table>${codes}</table></body></html>`;
}
