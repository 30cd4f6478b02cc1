// `Idempotency-Key` on creates (Stripe's convention and the IETF draft
// "The Idempotency-Key HTTP Header Field"): a create retried with the same key answers what the
// first one answered and creates nothing more, for 24 hours. The key is stored in the create's own
// transaction, so a create that failed leaves no key behind (a retry runs it again), and a second
// request with the key while the first is still running waits for it on the table's primary key,
// then answers the first one's result.
//
// A key belongs to the credential that sent it (a session's user, or one API key: a key of the same
// user is another principal), and a replay answers only what that credential may see now: the
// route's role is checked before (src/http/pipeline.ts), every network the answer names here (403
// once out of reach). An answer holding a secret shown once (a plaintext API key, a signing
// secret) is kept without it, and its replay is 409 `idempotency_secret_not_replayed` naming what
// was created: the client rotates that key or secret rather than take a record without it.
import { createHash } from 'node:crypto';
import type { Db } from './db.js';
import { AppError, accessDenied } from './errors.js';
import { canSeeNetwork, type Scope } from './scope.js';

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
const KEPT_HOURS = 24;
const KEY_FORMAT = /^[\x21-\x7e]{1,255}$/;

export interface IdempotentResult {
  status: number;
  data: unknown;
  replayed: boolean;
}

/** The header's value, checked; undefined when the request has none. */
export function checkIdempotencyKey(key: string | undefined): string | undefined {
  if (!key) return undefined;
  if (!KEY_FORMAT.test(key)) {
    const message = `header '${IDEMPOTENCY_HEADER}' must be 1 to 255 visible ASCII characters (a UUID is a good choice)`;
    throw new AppError('validation_failed', { field: `header.${IDEMPOTENCY_HEADER}`, reason: message, errors: [{ field: `header.${IDEMPOTENCY_HEADER}`, code: 'string_pattern_base', message }] });
  }
  return key;
}

/** Sessions of a user share its keys (its user id, as keys were stored before); an API key has its own. */
function principalOf(scope: Scope): string {
  if (scope.kind === 'api_key') return `api_key:${scope.apiKeyId}`;
  if (scope.kind === 'daemon') return `daemon:${scope.daemonId}`;
  return scope.userId;
}

/** Secrets shown once: user and daemon API keys (scp_u_, scp_d_), share link tokens (scp_s_), webhook signing secrets (whsec_). */
const SECRET = /^(scp_[uds]_[0-9A-Za-z]{32}|whsec_\S+)$/;

/** `value` without the fields that hold a secret, at any depth, and whether there was one. */
function withoutSecrets(value: unknown): { kept: unknown; withheld: boolean } {
  let withheld = false;
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (!v || typeof v !== 'object') return v;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (typeof x === 'string' && SECRET.test(x)) withheld = true;
      else out[k] = walk(x);
    }
    return out;
  };
  const kept = walk(JSON.parse(JSON.stringify(value ?? null)));
  return { kept, withheld };
}

/** Every network an answer names (`network_id`, `network_ids`), at any depth. */
function networksIn(value: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const v of value) networksIn(v, found);
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === 'network_id' && typeof v === 'string') found.add(v);
      else if (k === 'network_ids' && Array.isArray(v)) v.filter((id) => typeof id === 'string').forEach((id) => found.add(id));
      else networksIn(v, found);
    }
  }
  return found;
}

/** What the answer created: its id, or its first record's (`{api_key: {id}}`, `{daemon: {id}}`). */
function createdId(value: unknown): string {
  if (!value || typeof value !== 'object') return '';
  const record = value as Record<string, unknown>;
  if (typeof record.id === 'string') return record.id;
  for (const v of Object.values(record)) if (v && typeof v === 'object' && typeof (v as Record<string, unknown>).id === 'string') return (v as { id: string }).id;
  return '';
}

/** Runs `create` once per key: the first time in a transaction that also records its answer, later as a replay. */
export async function runIdempotent(
  db: Db, scope: Scope, key: string, request: { method: string; path: string; body: unknown }, status: number,
  create: (tx: Db) => Promise<unknown>,
): Promise<IdempotentResult> {
  const hash = createHash('sha256').update(`${request.method} ${request.path}\n${JSON.stringify(request.body ?? null)}`).digest('hex');
  const id = [scope.organizationId, principalOf(scope), key];
  return db.transaction(async (tx) => {
    await tx.query(`delete from idempotency_keys where organization_id = ? and principal = ? and key = ? and created_at < now() - interval '${KEPT_HOURS} hours'`, id);
    const fresh = await tx.query(
      `insert into idempotency_keys (organization_id, principal, key, request_hash) values (?, ?, ?, ?) on conflict do nothing returning key`, [...id, hash],
    );
    if (!fresh.length) {
      const earlier = (await tx.one<{ request_hash: string; status: number; response: unknown; secret_withheld: boolean }>(
        `select request_hash, status, response, secret_withheld from idempotency_keys where organization_id = ? and principal = ? and key = ?`, id,
      ))!;
      if (earlier.request_hash !== hash) throw new AppError('idempotency_key_reused', { key });
      for (const network of networksIn(earlier.response)) if (!canSeeNetwork(scope, network)) throw accessDenied('Network', network);
      if (earlier.secret_withheld) throw new AppError('idempotency_secret_not_replayed', { key, id: createdId(earlier.response) });
      return { status: earlier.status, data: earlier.response, replayed: true };
    }
    const data = await create(tx);
    const { kept, withheld } = withoutSecrets(data);
    await tx.query(
      `update idempotency_keys set status = ?, response = ?::jsonb, secret_withheld = ? where organization_id = ? and principal = ? and key = ?`,
      [status, JSON.stringify(kept), withheld, ...id],
    );
    return { status, data: JSON.parse(JSON.stringify(data ?? null)), replayed: false };
  });
}

/** Maintenance: keys past their 24 hours. */
export async function purgeIdempotencyKeys(db: Db): Promise<number> {
  const rows = await db.query(`delete from idempotency_keys where created_at < now() - interval '${KEPT_HOURS} hours' returning 1`);
  return rows.length;
}
