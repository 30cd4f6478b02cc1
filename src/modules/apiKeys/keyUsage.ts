// `last_used_at` of API keys without a write per request: uses are collected in memory and
// written in one statement every few seconds (and at shutdown).
import type { MikroORM } from '@mikro-orm/postgresql';
import { Db } from '../../core/db.js';
import type { Logger } from '../../core/logger.js';

export class KeyUsageRecorder {
  private pending = new Map<string, Date>();
  private timer: NodeJS.Timeout;

  constructor(private readonly orm: MikroORM, private readonly logger: Logger, intervalMs = 5000) {
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
  }

  touch(keyId: string): void {
    this.pending.set(keyId, new Date());
  }

  async flush(): Promise<void> {
    if (!this.pending.size) return;
    const batch = this.pending;
    this.pending = new Map();
    try {
      await new Db(this.orm.em.fork()).query(
        `update user_api_keys k set last_used_at = greatest(k.last_used_at, u.used_at)
         from unnest(?::uuid[], ?::timestamptz[]) as u(id, used_at) where k.id = u.id`,
        [[...batch.keys()], [...batch.values()].map((d) => d.toISOString())],
      );
    } catch (err) {
      this.logger.warn({ err }, 'could not record API key usage');
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
