import { Migration } from '@mikro-orm/migrations';

/**
 * The inventory: subnets, hosts and their children (IP addresses, ports, services, bindings,
 * interfaces), and dependencies. Every table keeps history through `history_enable` (foundation
 * migration); `last_seen_at` alone never makes a new state.
 */
export class Migration20261122000002Inventory extends Migration {
  override up(): void {
    // Columns every inventory row carries: tenancy, lineage, timestamps.
    const common = `
  organization_id uuid not null references organizations(id) on delete cascade,
  network_id uuid not null references networks(id) on delete cascade,
  lineage_id uuid not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  valid_from timestamptz not null default now()`;
    const discovered = `
  first_discovery_id uuid,
  last_discovery_id uuid,
  last_seen_at timestamptz`;

    this.addSql(`
create table subnets (
  id uuid primary key,
  cidr cidr not null,
  name varchar(100) not null,
  description varchar(500),
  subnet_type varchar(20) not null default 'None',
  source jsonb not null default '{"type":"Manual"}',
  tags uuid[] not null default '{}',${common}
)`);
    this.addSql(`create index subnets_network_idx on subnets (network_id, created_at, id)`);

    this.addSql(`
create table hosts (
  id uuid primary key,
  name varchar(100) not null,
  hostname varchar(253),
  description varchar(500),
  hidden boolean not null default false,
  tags uuid[] not null default '{}',
  source jsonb not null default '{"type":"Manual"}',
  virtualization jsonb,
  credential_assignments jsonb not null default '[]',${discovered},${common}
)`);
    this.addSql(`create index hosts_network_idx on hosts (network_id, created_at, id)`);
    this.addSql(`create index hosts_org_created_idx on hosts (organization_id, created_at, id)`);
    this.addSql(`create index hosts_tags_idx on hosts using gin (tags)`);

    this.addSql(`
create table ip_addresses (
  id uuid primary key,
  host_id uuid not null references hosts(id) on delete cascade,
  subnet_id uuid not null references subnets(id) on delete cascade,
  ip_address inet not null,
  mac_address varchar(17),
  name varchar(100),
  position integer not null default 0,${discovered},${common}
)`);
    this.addSql(`create index ip_addresses_host_idx on ip_addresses (host_id, position, id)`);
    this.addSql(`create index ip_addresses_subnet_ip_idx on ip_addresses (subnet_id, ip_address)`);
    this.addSql(`create index ip_addresses_mac_idx on ip_addresses (network_id, mac_address) where mac_address is not null`);

    this.addSql(`
create table ports (
  id uuid primary key,
  host_id uuid not null references hosts(id) on delete cascade,
  number integer not null check (number between 0 and 65535),
  protocol varchar(3) not null check (protocol in ('Tcp', 'Udp')),
  type varchar(40) not null,${discovered},${common},
  -- deferred: a sync may swap two ports' numbers within one transaction
  constraint ports_host_number_protocol_uq unique (host_id, number, protocol) deferrable initially deferred
)`);

    this.addSql(`
create table services (
  id uuid primary key,
  host_id uuid not null references hosts(id) on delete cascade,
  name varchar(100) not null,
  service_definition varchar(100) not null,
  position integer not null default 0,
  source jsonb not null default '{"type":"Manual"}',
  tags uuid[] not null default '{}',
  virtualization jsonb,${discovered},${common}
)`);
    this.addSql(`create index services_host_idx on services (host_id, position, id)`);

    this.addSql(`
create table bindings (
  id uuid primary key,
  service_id uuid not null references services(id) on delete cascade,
  type varchar(10) not null check (type in ('Port', 'IPAddress')),
  port_id uuid references ports(id) on delete cascade,
  ip_address_id uuid references ip_addresses(id) on delete cascade,
  check ((type = 'Port' and port_id is not null) or (type = 'IPAddress' and ip_address_id is not null and port_id is null)),${discovered},${common}
)`);
    this.addSql(`create index bindings_service_idx on bindings (service_id, created_at, id)`);
    this.addSql(`create index bindings_port_idx on bindings (port_id)`);
    this.addSql(`create index bindings_ip_idx on bindings (ip_address_id)`);

    this.addSql(`
create table interfaces (
  id uuid primary key,
  host_id uuid not null references hosts(id) on delete cascade,
  ip_address_id uuid references ip_addresses(id) on delete set null,
  if_index integer not null,
  if_type integer not null default 1,
  if_name varchar(255),
  if_descr varchar(255) not null default '',
  if_alias varchar(255),
  mac_address varchar(17),
  speed_bps bigint,
  admin_status varchar(10) not null default 'Up',
  oper_status varchar(20) not null default 'Up',
  cdp_address text, cdp_device_id text, cdp_platform text, cdp_port_id text,
  lldp_chassis_id text, lldp_mgmt_addr text, lldp_port_desc text, lldp_port_id text, lldp_sys_desc text, lldp_sys_name text,
  neighbor jsonb,${discovered},${common}
)`);
    this.addSql(`create index interfaces_host_idx on interfaces (host_id, if_index, id)`);

    this.addSql(`
create table dependencies (
  id uuid primary key,
  name varchar(100) not null,
  description varchar(500),
  color varchar(20) not null,
  dependency_type varchar(20) not null,
  edge_style varchar(20) not null,
  members jsonb not null,
  tags uuid[] not null default '{}',
  source jsonb not null default '{"type":"Manual"}',${common}
)`);
    this.addSql(`create index dependencies_network_idx on dependencies (network_id, created_at, id)`);

    // A deleted service or binding leaves every dependency that lists it (any code path, cascades included).
    this.addSql(`
create function dependency_members_forget() returns trigger language plpgsql as $$
declare
  kind text := case TG_TABLE_NAME when 'services' then 'Services' else 'Bindings' end;
  field text := case TG_TABLE_NAME when 'services' then 'service_ids' else 'binding_ids' end;
begin
  update dependencies
     set members = jsonb_set(members, array[field], (members -> field) - OLD.id::text)
   where network_id = OLD.network_id and members ->> 'type' = kind and jsonb_exists(members -> field, OLD.id::text);
  return null;
end $$`);
    this.addSql(`create trigger dependency_members_forget after delete on services for each row execute function dependency_members_forget()`);
    this.addSql(`create trigger dependency_members_forget after delete on bindings for each row execute function dependency_members_forget()`);

    for (const table of ['subnets', 'hosts', 'ip_addresses', 'ports', 'services', 'bindings', 'interfaces', 'dependencies']) {
      const volatile = ['subnets', 'dependencies'].includes(table) ? '' : `, array['last_seen_at']`;
      this.addSql(`select history_enable('${table}', 'network_id'${volatile})`);
    }
    // Children are read "as of" by their parent: index the parent column with the period.
    for (const [table, parent] of [['ip_addresses', 'host_id'], ['ports', 'host_id'], ['services', 'host_id'], ['interfaces', 'host_id'], ['bindings', 'service_id']]) {
      this.addSql(`create index ${table}_history_parent_asof_idx on ${table}_history using gist (${parent}, tstzrange(valid_from, valid_to))`);
    }
  }
}
