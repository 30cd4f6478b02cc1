import { Migration } from '@mikro-orm/migrations';

/**
 * Alerts (issue 39.4, src/modules/alerts): rules per network saying which changes a person wants to
 * hear of (a new host, a host offline or back online, a service or open port added or removed, an
 * address answering with a new MAC, a new vendor), with a delay before "offline" counts, quiet hours
 * and the channels (webhooks the organization has, e-mail addresses). When a Network session ends,
 * what it changed becomes one digest (`alerts`, one row per session with changes a rule wants: what
 * the Changes page lists and acknowledges), delivered once per channel: a webhook delivery
 * (webhook_deliveries, signed and retried as every other; held until the quiet hours end by its
 * next_attempt_at), one e-mail (`alert_emails`, an outbox the alert-delivery worker sends).
 * A webhook gets a `preset` that shapes its body for ntfy, Gotify, Slack, Discord or Teams.
 * Tenant tables like the others (organization_id in every key, paired in its foreign keys;
 * hash-partitioned by organization_id on the partitioned schema variant). Settings and
 * notifications, not inventory: no history twin and no events.
 */
export class Migration20261202000020Alerts extends Migration {
  override up(): void {
    this.addSql(`alter table webhooks add column preset varchar(20) not null default 'generic'
      constraint webhooks_preset_check check (preset in ('generic', 'ntfy', 'gotify', 'slack', 'discord', 'teams'))`);
    this.addSql(`
do $$
declare
  partitioned boolean := schema_variant() = 'partitioned';
  part text := case when schema_variant() = 'partitioned' then ' partition by hash (organization_id)' else '' end;
begin
  execute 'create table alert_rules (
    id uuid not null,
    organization_id uuid not null references organizations(id) on delete cascade,
    network_id uuid not null,
    kind varchar(20) not null check (kind in (''host_new'', ''host_offline'', ''host_online'', ''service_added'', ''service_removed'',
                                               ''port_added'', ''port_removed'', ''mac_changed'', ''vendor_new'')),
    enabled boolean not null default true,
    offline_delay_minutes integer not null default 0 check (offline_delay_minutes between 0 and 10080),
    quiet_hours jsonb,
    webhook_ids uuid[] not null default ''{}'',
    email_to text[] not null default ''{}'',
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint alert_rules_pkey primary key (id, organization_id),
    constraint alert_rules_network_fkey foreign key (network_id, organization_id) references networks (id, organization_id) on delete cascade
  )' || part;
  execute 'create table alerts (
    id uuid not null,
    organization_id uuid not null references organizations(id) on delete cascade,
    network_id uuid not null,
    session_id uuid,
    items jsonb not null,
    held_until timestamptz,
    created_at timestamptz not null default now(),
    acknowledged_at timestamptz,
    acknowledged_by uuid,
    constraint alerts_pkey primary key (id, organization_id),
    constraint alerts_network_fkey foreign key (network_id, organization_id) references networks (id, organization_id) on delete cascade
  )' || part;
  execute 'create table alert_emails (
    id uuid not null,
    organization_id uuid not null references organizations(id) on delete cascade,
    alert_id uuid not null,
    recipients text[] not null,
    subject text not null,
    body text not null,
    status varchar(10) not null default ''pending'' check (status in (''pending'', ''sent'', ''failed'')),
    attempts integer not null default 0,
    next_attempt_at timestamptz,
    sent_at timestamptz,
    last_error text,
    created_at timestamptz not null default now(),
    constraint alert_emails_pkey primary key (id, organization_id),
    constraint alert_emails_alert_fkey foreign key (alert_id, organization_id) references alerts (id, organization_id) on delete cascade
  )' || part;
  if partitioned then
    for i in 0..7 loop
      execute format('create table %I partition of alert_rules for values with (modulus 8, remainder %s)', 'alert_rules_p' || i, i);
      execute format('create table %I partition of alerts for values with (modulus 8, remainder %s)', 'alerts_p' || i, i);
      execute format('create table %I partition of alert_emails for values with (modulus 8, remainder %s)', 'alert_emails_p' || i, i);
    end loop;
  end if;
end $$`);
    this.addSql(`create index alert_rules_network_idx on alert_rules (organization_id, network_id, kind) where enabled`);
    this.addSql(`create index alerts_network_idx on alerts (organization_id, network_id, created_at desc, id)`);
    this.addSql(`create index alerts_items_idx on alerts using gin (items jsonb_path_ops)`);
    this.addSql(`create index alert_emails_due_idx on alert_emails (next_attempt_at) where status = 'pending'`);
  }
}
