// The client: openapi-fetch over the generated types. Every path, parameter, body and answer is
// typed from the API's OpenAPI document; a call answers `{ data, error, response }`, where `data`
// is the envelope `{ success, data, meta }` of a success and `error` the envelope of a failure.
import createClient, { type ClientOptions } from 'openapi-fetch';
import type { components, paths } from './schema.js';

export type { components, paths };
export type Schemas = components['schemas'];

export interface NetinventoryClientOptions extends ClientOptions {
  /** A user API key (`scp_u_…`), sent as `Authorization: Bearer`. */
  apiKey?: string;
  /** A session cookie (`session_id=…`), for scripts that signed in. */
  sessionCookie?: string;
}

export function createNetinventoryClient(baseUrl: string, options: NetinventoryClientOptions = {}) {
  const { apiKey, sessionCookie, headers, ...rest } = options;
  return createClient<paths>({
    baseUrl,
    headers: {
      ...(apiKey ? { Authorization: `Bearer ${apiKey}` } : {}),
      ...(sessionCookie ? { Cookie: sessionCookie } : {}),
      ...(headers as Record<string, string> | undefined),
    },
    ...rest,
  });
}

export type NetinventoryClient = ReturnType<typeof createNetinventoryClient>;
