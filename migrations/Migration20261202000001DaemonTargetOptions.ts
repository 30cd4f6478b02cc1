import { Migration } from '@mikro-orm/migrations';

/**
 * What an approval lets the daemon do on that subnet besides its port scan (issue 38.2, 38.7):
 * ask SNMP v2c with the community `public` (on by default: most devices that answer SNMP at all
 * answer it) and probe the raw printing ports 9100–9107 (off by default: a printer prints what it
 * receives there). Sent with the daemon's Network work (src/modules/daemons/targets.ts).
 */
export class Migration20261202000001DaemonTargetOptions extends Migration {
  override up(): void {
    this.addSql(`alter table daemon_targets add column snmp_public boolean not null default true, add column probe_raw_socket_ports boolean not null default false`);
  }
}
