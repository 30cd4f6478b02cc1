import { Migration } from '@mikro-orm/migrations';

/**
 * The subnets an operator approved for a daemon to scan (issue 24.8): a daemon scans only targets
 * it was given explicitly, and its self-reported subnets are suggestions until approved here
 * (src/modules/daemons/targets.ts). A revocation keeps its row (revoked_at, revoked_by): who
 * approved and who revoked what stays on record; the live approvals are the rows not revoked.
 * No foreign key to subnets: a deleted subnet's approval is simply no longer listed nor handed out
 * (reads join the live subnets), and its record stays. A deleted daemon's approvals go with it.
 */
export class Migration20261125000018DaemonTargets extends Migration {
  override up(): void {
    this.addSql(`
create table daemon_targets (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  network_id uuid not null,
  daemon_id uuid not null references daemons(id) on delete cascade,
  subnet_id uuid not null,
  approved_at timestamptz not null default now(),
  approved_by uuid,
  revoked_at timestamptz,
  revoked_by uuid
)`);
    // One live approval per daemon and subnet; the daemon's live approvals are read through it too.
    this.addSql(`create unique index daemon_targets_live_idx on daemon_targets (daemon_id, subnet_id) where revoked_at is null`);
  }
}
