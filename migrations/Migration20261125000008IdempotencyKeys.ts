import { Migration } from '@mikro-orm/migrations';

/**
 * The answers to creates sent with an `Idempotency-Key` header (issue 10.5), kept 24 hours so that a
 * retried create answers what the first one did instead of creating twice. Written in the same
 * transaction as the create itself: a create that rolled back leaves no key behind, and a second
 * request with the key waits on the primary key until the first one commits or rolls back.
 */
export class Migration20261125000008IdempotencyKeys extends Migration {
  override up(): void {
    this.addSql(`
create table idempotency_keys (
  organization_id uuid not null references organizations(id) on delete cascade,
  principal text not null,
  key text not null,
  request_hash text not null,
  status integer,
  response jsonb,
  created_at timestamptz not null default now(),
  primary key (organization_id, principal, key)
)`);
    this.addSql(`create index idempotency_keys_created_at on idempotency_keys (created_at)`);
  }
}
