import { Migration } from '@mikro-orm/migrations';

/**
 * Custom service definitions per organization (issue 38.6, src/modules/serviceDefinitions): what a
 * user tells our agent to recognise (ports, a probe, a pattern), sent with a Network discovery's work.
 * A tenant table like the others (migration 23's rules: organization_id in every key; hash-partitioned
 * by organization_id on the partitioned schema variant, as migration 24 made the others).
 * Settings, not inventory: no history twin and no events (as webhooks).
 */
export class Migration20261201000003ServiceDefinitions extends Migration {
  override up(): void {
    this.addSql(`
do $$
declare
  partitioned boolean := schema_variant() = 'partitioned';
begin
  execute 'create table service_definitions (
    id uuid not null,
    organization_id uuid not null references organizations(id) on delete cascade,
    name varchar(100) not null,
    category varchar(40) not null,
    icon varchar(40),
    ports integer[] not null,
    probe jsonb not null,
    match jsonb not null,
    enabled boolean not null default true,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint service_definitions_pkey primary key (id, organization_id),
    constraint service_definitions_name_key unique (organization_id, name)
  )' || case when partitioned then ' partition by hash (organization_id)' else '' end;
  if partitioned then
    for i in 0..7 loop
      execute format('create table %I partition of service_definitions for values with (modulus 8, remainder %s)', 'service_definitions_p' || i, i);
    end loop;
  end if;
end $$`);
    this.addSql(`create index service_definitions_org_idx on service_definitions (organization_id, created_at, id)`);
  }
}
