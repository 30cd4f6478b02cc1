// `Idempotency-Key` on creates (issue 10.5; Stripe's convention and the IETF draft
// "The Idempotency-Key HTTP Header Field"): a create retried with the same key answers what the
// first one answered and creates nothing more, for 24 hours. The key is stored in the create's own
// transaction, so a create that failed leaves no key behind (a retry runs it again), and a second
// request with the key while the first is still running waits for it on the table's primary key,
// then answers the first one's result. Scoped to the caller's user in the caller's organization.
import { createHash } from 'node:crypto';
import type { Db } from './db.js';
import { AppError } from './errors.js';
import type { Scope } from './scope.js';

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

/** Runs `create` once per key: the first time in a transaction that also records its answer, later as a replay. */
export async function runIdempotent(
  db: Db, scope: Scope, key: string, request: { method: string; path: string; body: unknown }, status: number,
  create: (tx: Db) => Promise<unknown>,
): Promise<IdempotentResult> {
  const principal = scope.userId || scope.daemonId || scope.apiKeyId || 'unknown';
  const hash = createHash('sha256').update(`${request.method} ${request.path}\n${JSON.stringify(request.body ?? null)}`).digest('hex');
  const id = [scope.organizationId, principal, key];
  return db.transaction(async (tx) => {
    await tx.query(`delete from idempotency_keys where organization_id = ? and principal = ? and key = ? and created_at < now() - interval '${KEPT_HOURS} hours'`, id);
    const fresh = await tx.query(
      `insert into idempotency_keys (organization_id, principal, key, request_hash) values (?, ?, ?, ?) on conflict do nothing returning key`, [...id, hash],
    );
    if (!fresh.length) {
      const earlier = (await tx.one<{ request_hash: string; status: number; response: unknown }>(
        `select request_hash, status, response from idempotency_keys where organization_id = ? and principal = ? and key = ?`, id,
      ))!;
      if (earlier.request_hash !== hash) throw new AppError('idempotency_key_reused', { key });
      return { status: earlier.status, data: earlier.response, replayed: true };
    }
    const data = await create(tx);
    await tx.query(`update idempotency_keys set status = ?, response = ?::jsonb where organization_id = ? and principal = ? and key = ?`, [status, JSON.stringify(data ?? null), ...id]);
    return { status, data: JSON.parse(JSON.stringify(data ?? null)), replayed: false };
  });
}

/** Maintenance: keys past their 24 hours. */
export async function purgeIdempotencyKeys(db: Db): Promise<number> {
  const rows = await db.query(`delete from idempotency_keys where created_at < now() - interval '${KEPT_HOURS} hours' returning 1`);
  return rows.length;
}
