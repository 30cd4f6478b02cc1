import { Migration } from '@mikro-orm/migrations';

/**
 * Writers no longer NOTIFY (issue 26.2). Migration 13's `events_capture` called
 * `pg_notify('netinv_outbox', '')` in every transaction that wrote an inventory row; PostgreSQL
 * takes one database-wide lock at the commit of any transaction that NOTIFYed (the notify queue's
 * "commit-time lock"), so concurrent writers committed one at a time. The outbox row is still written
 * in the writer's transaction (the events table and its cursor stay the source of truth); what wakes
 * the sequencer is now the writing process itself, after its commit (src/core/db.ts
 * onWriteCommitted → src/modules/events/hub.ts), plus a short poll of the outbox in every event hub
 * for writes made elsewhere (raw SQL, another program). Only the sequencer NOTIFYs, once per
 * sequenced batch (`netinv_events`, unchanged in events_sequence()), and it runs one at a time anyway.
 */
export function eventsCaptureSql(opts: { notifyEachWrite: boolean }): string {
  // `notifyEachWrite` restores migration 13's behaviour: only bench/concurrentIngest.ts asks for it,
  // to measure what the per-transaction NOTIFY cost (its baseline in the same run).
  const notify = opts.notifyEachWrite ? `
  get diagnostics written = row_count;
  if written > 0 then
    perform pg_notify('netinv_outbox', '');
  end if;` : '';
  return `
create or replace function events_capture() returns trigger language plpgsql as $$
declare
  entity text := TG_ARGV[0];
  actor_type text := coalesce(nullif(current_setting('netinv.actor_type', true), ''), 'system');
  actor_id uuid := nullif(current_setting('netinv.actor_id', true), '')::uuid;
  batch uuid := nullif(current_setting('netinv.batch_id', true), '')::uuid;
  written bigint;
begin
  if batch is null then
    batch := gen_random_uuid();
    perform set_config('netinv.batch_id', batch::text, true);
  end if;
  if TG_OP = 'INSERT' then
    insert into event_outbox (op, entity, entity_id, state_from, actor_type, actor_id, batch_id)
    select 'c', entity, r.id, r.valid_from, actor_type, actor_id, batch from events_new r;
  elsif TG_OP = 'DELETE' then
    insert into event_outbox (op, entity, entity_id, state_from, actor_type, actor_id, batch_id)
    select 'd', entity, r.id, r.valid_from, actor_type, actor_id, batch from events_old r;
  else
    -- A new state only (history_stamp moves valid_from when a tracked column changed; a second
    -- write in the same transaction rewrites the state this transaction already made).
    insert into event_outbox (op, entity, entity_id, state_from, prev_from, actor_type, actor_id, batch_id)
    select 'u', entity, n.id, n.valid_from, o.valid_from, actor_type, actor_id, batch
    from events_new n join events_old o on o.id = n.id where n.valid_from <> o.valid_from;
  end if;${notify}
  return null;
end $$`;
}

export class Migration20261125000021OutboxWakeups extends Migration {
  override up(): void {
    this.addSql(eventsCaptureSql({ notifyEachWrite: false }));
  }
}
