// `npm run client`, first half: writes clients/typescript/openapi.json, the OpenAPI document the
// server answers at /api/openapi.json, from the same route declarations (no server needed).
import { writeFileSync } from 'node:fs';
import { loadConfig } from '../src/config.js';
import { buildOpenApi } from '../src/http/openapi.js';
import { routes } from '../src/routes.js';

export const OPENAPI_FILE = new URL('../clients/typescript/openapi.json', import.meta.url);
export const openApiText = () => `${JSON.stringify(buildOpenApi(routes, loadConfig()), null, 2)}\n`;

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(OPENAPI_FILE, openApiText());
  console.log(`wrote ${OPENAPI_FILE.pathname}`);
}
