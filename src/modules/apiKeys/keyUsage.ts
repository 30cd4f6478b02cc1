// `last_used_at` of API keys, user and daemon keys alike, without a write per request (a daemon's
// heartbeat would otherwise write its key's row every few seconds): uses are collected in memory and
// written in one statement per kind every few seconds (and at shutdown).
import type { MikroORM } from '@mikro-orm/postgresql';
import { Db } from '../../core/db.js';
import type { Logger } from '../../core/logger.js';

const TABLES = { user: 'user_api_keys', daemon: 'daemon_api_keys' } as const;
export type KeyKind = keyof typeof TABLES;

export class KeyUsageRecorder {
  private pending = { user: new Map<string, Date>(), daemon: new Map<string, Date>() };
  private timer: NodeJS.Timeout;

  constructor(private readonly orm: MikroORM, private readonly logger: Logger, intervalMs = 5000) {
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
  }

  touch(keyId: string, kind: KeyKind = 'user'): void {
    this.pending[kind].set(keyId, new Date());
  }

  async flush(): Promise<void> {
    const batches = this.pending;
    this.pending = { user: new Map(), daemon: new Map() };
    for (const kind of Object.keys(TABLES) as KeyKind[]) {
      const batch = batches[kind];
      if (!batch.size) continue;
      try {
        await new Db(this.orm.em.fork()).query(
          `update ${TABLES[kind]} k set last_used_at = greatest(k.last_used_at, u.used_at)
           from unnest(?::uuid[], ?::timestamptz[]) as u(id, used_at) where k.id = u.id`,
          [[...batch.keys()], [...batch.values()].map((d) => d.toISOString())],
        );
      } catch (err) {
        this.logger.warn({ err }, 'could not record API key usage');
      }
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
