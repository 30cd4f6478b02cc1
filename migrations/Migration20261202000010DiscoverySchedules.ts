import { Migration } from '@mikro-orm/migrations';

/**
 * Discovery schedules (issue 39.1, src/modules/schedules): a daemon's Network discovery every N
 * minutes or by a cron expression in a time zone, run by the discovery-schedule worker (one BullMQ
 * job scheduler per schedule, keyed by its id). subnet_ids null: every subnet approved for the daemon
 * when it runs; a list: those of them still approved. A tenant table like the others (migration 23's
 * rules: organization_id in every key and paired in its foreign key; hash-partitioned by
 * organization_id on the partitioned schema variant, as migration 24 made the others). Settings, not
 * inventory: no history twin and no events. Deleted with its daemon.
 *
 * discovery_schedule_runs: one row per interval that ran (scheduled_for: the interval's instant), its
 * outcome and the session it queued; unique per (schedule, interval), so a job delivered twice (a
 * worker killed mid-job, its job taken up again) does not run the interval twice.
 */
export class Migration20261202000010DiscoverySchedules extends Migration {
  override up(): void {
    this.addSql(`
do $$
declare
  partitioned boolean := schema_variant() = 'partitioned';
  part text := case when schema_variant() = 'partitioned' then ' partition by hash (organization_id)' else '' end;
begin
  execute 'create table discovery_schedules (
    id uuid not null,
    organization_id uuid not null references organizations(id) on delete cascade,
    network_id uuid not null,
    daemon_id uuid not null,
    subnet_ids uuid[],
    every_minutes integer check (every_minutes >= 1),
    cron text,
    timezone text not null default ''UTC'',
    jitter_seconds integer not null default 0 check (jitter_seconds between 0 and 3600),
    enabled boolean not null default true,
    max_failures integer not null default 3 check (max_failures >= 1),
    consecutive_failures integer not null default 0,
    disabled_reason text,
    next_run_at timestamptz,
    last_run_at timestamptz,
    last_outcome text,
    last_session_id uuid,
    last_session_accounted boolean not null default true,
    last_error text,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint discovery_schedules_pkey primary key (id, organization_id),
    constraint discovery_schedules_daemon_fkey foreign key (daemon_id, organization_id) references daemons (id, organization_id) on delete cascade,
    constraint discovery_schedules_one_timing check ((every_minutes is null) <> (cron is null))
  )' || part;
  execute 'create table discovery_schedule_runs (
    schedule_id uuid not null,
    organization_id uuid not null,
    scheduled_for timestamptz not null,
    ran_at timestamptz not null default now(),
    outcome text not null,
    session_id uuid,
    error text,
    constraint discovery_schedule_runs_pkey primary key (schedule_id, scheduled_for, organization_id),
    constraint discovery_schedule_runs_schedule_fkey foreign key (schedule_id, organization_id) references discovery_schedules (id, organization_id) on delete cascade
  )' || part;
  if partitioned then
    for i in 0..7 loop
      execute format('create table %I partition of discovery_schedules for values with (modulus 8, remainder %s)', 'discovery_schedules_p' || i, i);
      execute format('create table %I partition of discovery_schedule_runs for values with (modulus 8, remainder %s)', 'discovery_schedule_runs_p' || i, i);
    end loop;
  end if;
end $$`);
    this.addSql(`create index discovery_schedules_daemon_idx on discovery_schedules (organization_id, daemon_id, created_at, id)`);
  }
}
