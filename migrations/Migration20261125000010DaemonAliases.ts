import { Migration } from '@mikro-orm/migrations';

/**
 * A daemon chooses its own id. When a daemon registers with an id that another organization's
 * daemon already has, it gets a server-chosen id and keeps speaking with its own (issue 10.6: the
 * answer must not differ from the one for an unused id, or register would reveal the other
 * daemon). The pair (organization, the id the daemon uses) → the daemon's row.
 */
export class Migration20261125000010DaemonAliases extends Migration {
  override up(): void {
    this.addSql(`
create table daemon_aliases (
  organization_id uuid not null references organizations(id) on delete cascade,
  external_id uuid not null,
  daemon_id uuid not null references daemons(id) on delete cascade,
  primary key (organization_id, external_id)
)`);
  }
}
