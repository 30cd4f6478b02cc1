// The long-lived objects of a process, built once in src/app.ts and handed to every handler.
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Redis } from 'ioredis';
import type { AppConfig } from '../config.js';
import type { Logger } from './logger.js';
import type { RateLimiter } from '../http/rateLimiter.js';
import type { LoginGuard } from '../modules/accounts/loginGuard.js';
import type { KeyUsageRecorder } from '../modules/apiKeys/keyUsage.js';

export interface Services {
  config: AppConfig;
  orm: MikroORM;
  redis: Redis;
  logger: Logger;
  rateLimiter: RateLimiter;
  loginGuard: LoginGuard;
  keyUsage: KeyUsageRecorder;
}
