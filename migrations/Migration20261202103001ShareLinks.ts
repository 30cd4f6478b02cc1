import { Migration } from '@mikro-orm/migrations';

/**
 * Share links (src/modules/shareLinks): a read-only link to one network's map (a view, live or as
 * of a fixed instant `at`) until `expires_at`, unless revoked. Only the SHA-256 hex of the token is
 * stored; the token is looked up before the organization is known, so (token_hash, organization_id)
 * is unique and the lookup reads every partition on purpose (ACROSS_ORGANIZATIONS). A tenant table
 * like the others (organization_id in every key, paired in its foreign key; hash-partitioned on the
 * partitioned schema variant). Deleted with its network. created_by has no foreign key: a link of a
 * user removed since stays listed (it no longer opens: the lookup requires its creator to be an
 * Owner or Admin of the organization now).
 */
export class Migration20261202103001ShareLinks extends Migration {
  override up(): void {
    this.addSql(`
do $$
declare
  part text := case when schema_variant() = 'partitioned' then ' partition by hash (organization_id)' else '' end;
begin
  execute 'create table share_links (
    id uuid not null,
    organization_id uuid not null references organizations(id) on delete cascade,
    network_id uuid not null,
    token_hash char(64) not null,
    label text,
    view text not null,
    at timestamptz,
    expires_at timestamptz not null,
    created_by uuid not null,
    created_at timestamptz not null default now(),
    revoked_at timestamptz,
    last_used_at timestamptz,
    constraint share_links_pkey primary key (id, organization_id),
    constraint share_links_network_fkey foreign key (network_id, organization_id) references networks (id, organization_id) on delete cascade,
    constraint share_links_view check (view in (''l3'', ''workloads'', ''application'', ''l2''))
  )' || part;
  if schema_variant() = 'partitioned' then
    for i in 0..7 loop
      execute format('create table %I partition of share_links for values with (modulus 8, remainder %s)', 'share_links_p' || i, i);
    end loop;
  end if;
end $$`);
    this.addSql(`create unique index share_links_token_idx on share_links (token_hash, organization_id)`);
    this.addSql(`create index share_links_network_idx on share_links (organization_id, network_id, created_at, id)`);
  }
}
