import { Migration } from '@mikro-orm/migrations';

/**
 * The event outbox is a queue: every row is inserted, sequenced and deleted within moments. With
 * PostgreSQL's default autovacuum thresholds (20 % of a table that is almost always empty) its dead
 * rows pile up after a large import, and every "is anything waiting?" probe of the sequencer, the
 * event feed and the topology cache walks them (measured: 13 ms per probe with 480,000 dead rows,
 * against 0.3 ms vacuumed). Vacuumed after every 1,000 deleted rows instead.
 */
export class Migration20261125000014OutboxVacuum extends Migration {
  override up(): void {
    this.addSql(`alter table event_outbox set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 1000)`);
  }
}
