import { Migration } from '@mikro-orm/migrations';

/**
 * The TLS certificate a server_poll agent presented when the server paired it (provision with a
 * pairing_code over https), by its SHA-256 fingerprint: the server then accepts that certificate
 * only, and refuses the daemon's url if it answers with another (src/modules/serverPoll/client.ts).
 * Kept with the daemon's key, the credential the server calls the agent with: a column of
 * daemon_api_keys (a reference table, no history) rather than of daemons, whose history twin's
 * columns the capture triggers are told one by one. Null: not pinned (plain http, or a daemon
 * configured by hand), and the certificate is judged by its CA as before.
 */
export class Migration20261128000001DaemonTlsPins extends Migration {
  override up(): void {
    this.addSql(`alter table daemon_api_keys add column tls_fingerprint text`);
  }
}
