import { Migration } from '@mikro-orm/migrations';

/**
 * Why a server_poll daemon could not be polled, from the first failure on (issue 9.10), so that it
 * shows on the daemon where users look. A table of its own rather than columns of `daemons`: it is
 * volatile state, not part of the daemon's history (a new column would also have to be threaded
 * through daemons_history, whose column order the history triggers rely on). Removed at the next
 * successful contact.
 */
export class Migration20261124000007DaemonPollErrors extends Migration {
  override up(): void {
    this.addSql(`
create table daemon_poll_errors (
  daemon_id uuid primary key references daemons(id) on delete cascade,
  last_error text not null,
  last_error_at timestamptz not null default now()
)`);
  }
}
