// The only way the web application talks to the service: its public API, same origin, with the
// session cookie. Answers are the API's envelope; an error becomes an ApiError carrying the
// envelope's message and code, shown to the user as is.

export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly params?: Record<string, unknown>) {
    super(message);
  }
}

export interface Page<T> { items: T[]; total: number; limit: number; offset: number }

/** Called when the session is gone (401 on anything but the sign-in itself). */
let onSignedOut: (reason: 'expired') => void = () => undefined;
export const whenSignedOut = (fn: (reason: 'expired') => void) => { onSignedOut = fn; };

/**
 * A path with each interpolated value encoded as one segment: apiPath`/api/v1/hosts/${id}` names a
 * host whatever `id` holds (`../auth/keys` stays inside the segment).
 */
export function apiPath(parts: TemplateStringsArray, ...segments: Array<string | number>): string {
  return parts.reduce((path, part, i) => `${path}${encodeURIComponent(String(segments[i - 1]))}${part}`);
}

/**
 * Whether the browser would send `path` as written: a value put into a path unencoded (`..`, `%2e%2e`,
 * `\`) makes the browser resolve it to another resource, so such a path is never requested.
 */
export function isPlainPath(path: string): boolean {
  const [pathname = ''] = path.split(/[?#]/, 1);
  return pathname.startsWith('/') && new URL(pathname, 'http://localhost').pathname === pathname;
}

/** `textType`: the body is text of that media type (a CSV import), sent as is; else JSON. */
async function request(method: string, path: string, body?: unknown, textType?: string): Promise<any> {
  if (!isPlainPath(path)) throw new ApiError(0, 'path_not_plain', `Refused to request ${path}: a path segment was not encoded`);
  const res = await fetch(path, {
    method,
    credentials: 'same-origin',
    headers: body === undefined ? { Accept: 'application/json' } : { Accept: 'application/json', 'Content-Type': textType ?? 'application/json' },
    body: body === undefined ? undefined : textType ? String(body) : JSON.stringify(body),
  });
  const json = await res.json().catch(() => null);
  if (res.status === 401 && !path.startsWith('/api/auth/')) onSignedOut('expired');
  if (!res.ok || !json?.success) {
    throw new ApiError(res.status, json?.code ?? `http_${res.status}`, json?.error ?? `${res.status} ${res.statusText}`, json?.params);
  }
  return json;
}

export const api = {
  get: async <T = any>(path: string): Promise<T> => (await request('GET', path)).data,
  list: async <T = any>(path: string): Promise<Page<T>> => {
    const json = await request('GET', path);
    const p = json.meta?.pagination ?? {};
    return { items: json.data, total: p.total_count ?? p.total ?? json.data.length, limit: p.limit ?? json.data.length, offset: p.offset ?? 0 };
  },
  post: async <T = any>(path: string, body: unknown = {}): Promise<T> => (await request('POST', path, body)).data,
  /** A text body of its own media type (`text/csv` for the host import). */
  postText: async <T = any>(path: string, text: string, type: string): Promise<T> => (await request('POST', path, text, type)).data,
  put: async <T = any>(path: string, body: unknown): Promise<T> => (await request('PUT', path, body)).data,
  /** A JSON merge patch: only the fields sent change (the API reads application/json as one). */
  patch: async <T = any>(path: string, body: unknown): Promise<T> => (await request('PATCH', path, body)).data,
  delete: async <T = any>(path: string): Promise<T> => (await request('DELETE', path)).data,
};

/**
 * Answers asked for before the screen that reads them exists: the map's graph is requested at boot,
 * alongside the session, instead of after it (one round trip less before the first drawing).
 */
const early = new Map<string, { answer: Promise<unknown>; at: number }>();
const PREFETCH_FRESH_MS = 10_000;
export function prefetch(path: string): void {
  if (early.has(path)) return;
  const answer = api.get(path);
  answer.catch(() => undefined); // a failure is not reported here: takePrefetched asks again
  early.set(path, { answer, at: performance.now() });
}
/**
 * The prefetched answer for this path, once, if it is recent; if it failed (a session that had
 * expired, signed in since), the API is asked again.
 */
export function takePrefetched<T>(path: string): Promise<T> | undefined {
  const entry = early.get(path);
  early.delete(path);
  if (!entry || performance.now() - entry.at > PREFETCH_FRESH_MS) return undefined;
  return (entry.answer as Promise<T>).catch(() => api.get<T>(path));
}

/** A query string from the defined values (arrays as comma lists). */
export function query(params: Record<string, string | number | boolean | string[] | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '' || (Array.isArray(v) && !v.length)) continue;
    q.set(k, Array.isArray(v) ? v.join(',') : String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}
