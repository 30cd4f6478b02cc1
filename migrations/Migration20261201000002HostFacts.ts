import { Migration } from '@mikro-orm/migrations';

/**
 * What a host is, as our agent's evidence says (issue 38.3): its kind of device (NAS, Printer,
 * Router, Camera…) and model, its OS and version, and the confidence of the OS evidence. Set by
 * discovery only (read-only in the API); a report without them keeps what is stored. Null for hosts
 * no such evidence named. In the history twin too (inserted rows are copied by name).
 */
export class Migration20261201000002HostFacts extends Migration {
  override up(): void {
    const columns = 'add column device_type text, add column device_model text, add column os_name text, add column os_version text, add column os_confidence varchar(10)';
    this.addSql(`alter table hosts ${columns}`);
    this.addSql(`alter table hosts_history ${columns}`);
  }
}
