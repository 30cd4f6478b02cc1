// Configuration read once from the environment. Everything has a working default for a
// developer machine; DATABASE_URL and REDIS_URL override whatever scripts/services.ts found.
import { readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

export interface AppConfig {
  port: number;
  databaseUrl: string;
  redisUrl: string;
  /** Prefix of every Redis key and queue name, so that tests (and tenants of one Redis) never collide. */
  redisPrefix: string;
  apiVersion: number;
  serverVersion: string;
  secureCookies: boolean;
  /** Register also creates a first network named "Default" (decisions §2). */
  createDefaultNetwork: boolean;
  metricsToken: string | undefined;
  /**
   * OPERATOR_ORGANIZATION_ID: whose Owners and Admins see the queue dashboard, which shows every
   * organization's jobs. Unset: the oldest organization (the one that set the instance up).
   */
  operatorOrganizationId: string | undefined;
  logLevel: string;
}

export function loadConfig(overrides: Partial<AppConfig> = {}): AppConfig {
  const env = process.env;
  return {
    port: Number(env.PORT ?? 3000),
    databaseUrl: env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/netinventory',
    redisUrl: env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    redisPrefix: env.REDIS_PREFIX ?? 'netinv:',
    apiVersion: 1,
    serverVersion: pkg.version,
    secureCookies: env.SECURE_COOKIES === 'true',
    createDefaultNetwork: env.CREATE_DEFAULT_NETWORK !== 'false',
    metricsToken: env.METRICS_TOKEN,
    operatorOrganizationId: env.OPERATOR_ORGANIZATION_ID || undefined,
    logLevel: env.LOG_LEVEL ?? 'info',
    ...overrides,
  };
}
