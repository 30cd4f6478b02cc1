import { Migration } from '@mikro-orm/migrations';

/** Daemons (discovery agents), their API keys, and discovery sessions. */
export class Migration20261122000003Daemons extends Migration {
  override up(): void {
    this.addSql(`
create table daemon_api_keys (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  network_id uuid not null references networks(id) on delete cascade,
  user_id uuid references users(id) on delete set null,
  name varchar(100) not null,
  key_hash char(64) not null unique,
  -- Only for server_poll daemons: the server presents this key when it calls the daemon.
  server_key text,
  is_enabled boolean not null default true,
  expires_at timestamptz,
  last_used_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
)`);
    this.addSql(`create index daemon_api_keys_network_idx on daemon_api_keys (network_id)`);

    this.addSql(`
create table daemons (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  network_id uuid not null references networks(id) on delete cascade,
  -- A host a daemon runs on cannot be deleted while the daemon exists (409 entity_in_use).
  host_id uuid references hosts(id) on delete restrict,
  user_id uuid references users(id) on delete set null,
  api_key_id uuid references daemon_api_keys(id) on delete set null,
  name varchar(100) not null,
  mode varchar(12) not null check (mode in ('daemon_poll', 'server_poll')),
  url text not null default '',
  tags uuid[] not null default '{}',
  capabilities jsonb not null default '{"has_docker_socket": false, "interfaced_subnet_ids": []}',
  is_unreachable boolean not null default false,
  consecutive_failures integer not null default 0,
  standby boolean not null default false,
  standby_cleared_at timestamptz,
  last_seen timestamptz,
  version varchar(50),
  lineage_id uuid not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  valid_from timestamptz not null default now()
)`);
    this.addSql(`create index daemons_network_idx on daemons (network_id, created_at, id)`);
    this.addSql(`create index daemons_host_idx on daemons (host_id)`);
    // Heartbeats move last_seen (and the poller's failure count) without making a new state.
    this.addSql(`select history_enable('daemons', 'network_id', array['last_seen', 'consecutive_failures'])`);

    // Discovery sessions: the work handed to daemons and the progress they report. Kept in the
    // database (not process memory) because several API and worker processes serve one daemon.
    this.addSql(`
create table discovery_sessions (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  network_id uuid not null references networks(id) on delete cascade,
  daemon_id uuid not null references daemons(id) on delete cascade,
  discovery_type jsonb not null,
  phase varchar(12) not null default 'Pending',
  progress integer not null default 0,
  error text,
  cancel_requested boolean not null default false,
  started_at timestamptz,
  finished_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
)`);
    this.addSql(`create index discovery_sessions_daemon_idx on discovery_sessions (daemon_id, created_at)`);
  }
}
