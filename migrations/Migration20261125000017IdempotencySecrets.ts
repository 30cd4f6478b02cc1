import { Migration } from '@mikro-orm/migrations';

/**
 * An answer that carried a secret shown once (a plaintext API key, a webhook's signing secret) is
 * kept without it, and marked: a retry with its Idempotency-Key is then told 409
 * `idempotency_secret_not_replayed` (src/core/idempotency.ts) instead of a record without its
 * secret, which a client would take for a complete answer.
 */
export class Migration20261125000017IdempotencySecrets extends Migration {
  override up(): void {
    this.addSql(`alter table idempotency_keys add column secret_withheld boolean not null default false`);
  }
}
