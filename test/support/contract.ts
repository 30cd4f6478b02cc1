// Every answer a test receives through `call()` is checked against the OpenAPI document the server
// publishes (built here from the same route declarations): its status must be documented for the
// operation and its JSON body must match that status's schema. So the document cannot drift from
// what the API really sends (required fields, nulls, enums, formats), whichever test exercised it.
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import { loadConfig } from '../../src/config.js';
import { buildOpenApi } from '../../src/http/openapi.js';
import { routes } from '../../src/routes.js';

interface Operation { method: string; pattern: RegExp; template: string; responses: Record<string, any> }

let operations: Operation[] | undefined;
let components: unknown;
const validators = new Map<string, ValidateFunction>();
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
(addFormats as unknown as (a: Ajv2020) => void)(ajv);

function load(): Operation[] {
  if (operations) return operations;
  const doc = buildOpenApi(routes, loadConfig()) as { paths: Record<string, Record<string, any>>; components: unknown };
  components = doc.components;
  operations = Object.entries(doc.paths).flatMap(([template, ops]) => Object.entries(ops).map(([method, op]) => ({
    method: method.toUpperCase(), template, responses: op.responses,
    pattern: new RegExp(`^${template.replace(/\{\w+\}/g, '[^/]+')}$`),
  })));
  // A literal path (/api/v1/hosts/bulk-delete) wins over a parameter (/api/v1/hosts/{id}).
  operations.sort((a, b) => (a.template.match(/\{/g)?.length ?? 0) - (b.template.match(/\{/g)?.length ?? 0));
  return operations;
}

/** What is wrong with an answer by the document (empty when it conforms or is not the API's JSON). */
export function contractViolations(method: string, url: string, status: number, contentType: string | null, body: unknown): string[] {
  const path = new URL(url).pathname;
  const op = load().find((o) => o.method === method.toUpperCase() && o.pattern.test(path));
  if (!op || status >= 500) return [];
  let response = op.responses[String(status)];
  if (response?.$ref) response = (components as { responses: Record<string, unknown> }).responses[response.$ref.split('/').pop()];
  if (!response) return [`${method} ${op.template}: status ${status} is not documented (documented: ${Object.keys(op.responses).join(', ')})`];
  const schema = response.content?.['application/json']?.schema;
  if (!schema || !contentType?.includes('application/json')) return [];
  const key = `${method} ${op.template} ${status}`;
  let validate = validators.get(key);
  if (!validate) validators.set(key, (validate = ajv.compile({ ...schema, components })));
  if (validate(body)) return [];
  return (validate.errors ?? []).slice(0, 5).map((e) => `${key}: ${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
}

/** The same check as an openapi-fetch middleware, for calls made through the generated client. */
export const contractCheck = {
  async onResponse({ request, response }: { request: Request; response: Response }) {
    const type = response.headers.get('content-type');
    const body = type?.includes('application/json') ? await response.clone().json() : undefined;
    const violations = contractViolations(request.method, request.url, response.status, type, body);
    if (violations.length) throw new Error(`The answer does not match the OpenAPI document:\n${violations.join('\n')}`);
    return undefined;
  },
};
