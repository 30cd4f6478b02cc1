import { Migration } from '@mikro-orm/migrations';

/**
 * Accounts, tenancy and the history (SCD2) mechanism, proven on networks and tags.
 * docs/architecture.md explains the history design; in short: every history-bearing table `x`
 * has a twin `x_history` holding all its states, written by one generic trigger, so no code
 * path (API, worker, raw SQL) can change a row without recording it.
 */
export class Migration20261122000001Foundation extends Migration {
  override up(): void {
    this.addSql(`create extension if not exists btree_gist`);
    this.addSql(`create extension if not exists citext`);

    // ---- The history mechanism ------------------------------------------------------------
    // BEFORE trigger: stamps the state's instant. Columns named in the trigger arguments (e.g.
    // last_seen_at) do not make a new state on their own: they are updated in place.
    this.addSql(`
create function history_stamp() returns trigger language plpgsql as $$
declare
  volatile_cols text[] := coalesce(TG_ARGV::text[], '{}') || array['updated_at', 'valid_from'];
begin
  if TG_OP = 'INSERT' then
    NEW.created_at := coalesce(NEW.created_at, now());
    NEW.valid_from := now();
    NEW.updated_at := NEW.valid_from;
    NEW.lineage_id := coalesce(NEW.lineage_id, NEW.id);
    return NEW;
  end if;
  NEW.id := OLD.id;
  NEW.created_at := OLD.created_at;
  NEW.lineage_id := coalesce(NEW.lineage_id, OLD.lineage_id);
  if (to_jsonb(NEW) - volatile_cols) = (to_jsonb(OLD) - volatile_cols) or OLD.valid_from = now() then
    -- Nothing that matters changed, or a second write in the same transaction: same state.
    NEW.valid_from := OLD.valid_from;
    NEW.updated_at := OLD.updated_at;
  else
    -- Strictly after the previous state even if a concurrent transaction that started later
    -- committed first: valid ranges of one entity never overlap, and updated_at always moves.
    NEW.valid_from := greatest(now(), OLD.valid_from + interval '1 microsecond');
    NEW.updated_at := NEW.valid_from;
  end if;
  return NEW;
end $$`);
    // AFTER trigger: closes the open state and records the new one in <table>_history.
    this.addSql(`
create function history_record() returns trigger language plpgsql as $$
declare
  hist text := quote_ident(TG_TABLE_NAME || '_history');
begin
  if TG_OP = 'UPDATE' and to_jsonb(NEW) = to_jsonb(OLD) then
    return null; -- an update that changes no column at all leaves the history alone
  end if;
  if TG_OP in ('UPDATE', 'DELETE') then
    if OLD.valid_from = now() and TG_OP = 'DELETE' then
      -- Created (or changed) and deleted in one transaction: that state never was visible.
      execute format('delete from %s where id = $1 and valid_to is null', hist) using OLD.id;
      return null;
    elsif TG_OP = 'DELETE' then
      execute format('update %s set valid_to = greatest(now(), valid_from + interval ''1 microsecond'') where id = $1 and valid_to is null', hist) using OLD.id;
      return null;
    elsif NEW.valid_from = OLD.valid_from then
      -- Same state (see history_stamp): replace the open state in place.
      execute format('delete from %s where id = $1 and valid_to is null', hist) using OLD.id;
    else
      execute format('update %s set valid_to = $2 where id = $1 and valid_to is null', hist) using OLD.id, NEW.valid_from;
    end if;
  end if;
  execute format('insert into %s select * from jsonb_populate_record(null::%s, $1)', hist, hist) using to_jsonb(NEW);
  return null;
end $$`);
    // Attaches the mechanism to a table: creates the twin, its indexes and both triggers.
    // scope_col is the tenancy column that "as of" lists filter on (organization_id or network_id).
    this.addSql(`
create function history_enable(tbl text, scope_col text, volatile_cols text[] default '{}') returns void language plpgsql as $$
declare
  hist text := tbl || '_history';
  args text := coalesce((select string_agg(quote_literal(c), ', ') from unnest(volatile_cols) c), '');
begin
  execute format('create table %I (like %I including defaults)', hist, tbl);
  execute format('alter table %I add column valid_to timestamptz, add primary key (id, valid_from)', hist);
  execute format('alter table %I add constraint %I check (valid_to is null or valid_to > valid_from)', hist, hist || '_range_ck');
  execute format('create index %I on %I using gist (%I, tstzrange(valid_from, valid_to))', hist || '_asof_idx', hist, scope_col);
  execute format('create unique index %I on %I (id) where valid_to is null', hist || '_open_idx', hist);
  execute format('create trigger history_stamp before insert or update on %I for each row execute function history_stamp(%s)', tbl, args);
  execute format('create trigger history_record after insert or update or delete on %I for each row execute function history_record()', tbl);
end $$`);

    // ---- Accounts ----------------------------------------------------------------------------
    this.addSql(`
create table organizations (
  id uuid primary key,
  name varchar(100) not null,
  api_access_enabled boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
)`);
    this.addSql(`
create table users (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  email citext not null unique,
  password_hash text not null,
  permissions varchar(10) not null check (permissions in ('Owner', 'Admin', 'Member', 'Viewer')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
)`);
    this.addSql(`create index users_org_idx on users (organization_id)`);
    this.addSql(`
create table sessions (
  id_hash char(64) primary key,
  user_id uuid not null references users(id) on delete cascade,
  expires_at timestamptz not null,
  created_at timestamptz not null default now()
)`);
    this.addSql(`create index sessions_user_idx on sessions (user_id)`);
    this.addSql(`
create table user_api_keys (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  user_id uuid not null references users(id) on delete cascade,
  name varchar(100) not null,
  key_hash char(64) not null unique,
  permissions varchar(10) not null check (permissions in ('Owner', 'Admin', 'Member', 'Viewer')),
  network_ids uuid[],
  expires_at timestamptz,
  is_enabled boolean not null default true,
  last_used_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
)`);
    this.addSql(`create index user_api_keys_user_idx on user_api_keys (user_id)`);

    // ---- Networks and tags (history-bearing) -------------------------------------------------
    this.addSql(`
create table networks (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  name varchar(100) not null,
  description varchar(500),
  tags uuid[] not null default '{}',
  lineage_id uuid not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  valid_from timestamptz not null default now()
)`);
    this.addSql(`create index networks_org_idx on networks (organization_id, created_at, id)`);
    this.addSql(`select history_enable('networks', 'organization_id')`);
    this.addSql(`
create table user_network_access (
  user_id uuid not null references users(id) on delete cascade,
  network_id uuid not null references networks(id) on delete cascade,
  primary key (user_id, network_id)
)`);
    this.addSql(`create index user_network_access_network_idx on user_network_access (network_id)`);
    this.addSql(`
create table tags (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  name varchar(100) not null,
  description varchar(500),
  color varchar(20) not null,
  is_application boolean not null default false,
  lineage_id uuid not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  valid_from timestamptz not null default now(),
  constraint tags_org_name_uq unique (organization_id, name)
)`);
    this.addSql(`create index tags_org_idx on tags (organization_id, created_at, id)`);
    this.addSql(`select history_enable('tags', 'organization_id')`);
  }
}
