// Configuration read once from the environment. Everything has a working default for a
// developer machine; DATABASE_URL and REDIS_URL override whatever scripts/services.ts found.
import { readFileSync } from 'node:fs';
import { parseAllowedNetworks } from './core/outboundPolicy.js';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

export interface AppConfig {
  port: number;
  /** HOST: the address the API listens on; unset, every address (IPv4 and IPv6). */
  host: string | undefined;
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
   * Who sees the operator surfaces (the queue dashboard shows every organization's jobs), besides
   * the users granted with `npm run operator -- grant <email>`: OPERATOR_EMAILS (comma-separated),
   * and OPERATOR_ORGANIZATION_ID (that organization's Owners and Admins). Nobody by default.
   */
  operatorEmails: string[];
  operatorOrganizationId: string | undefined;
  logLevel: string;
  /**
   * DAEMON_ALLOWED_NETWORKS: CIDRs the server may call although the outbound policy refuses them
   * (src/core/outboundPolicy.ts), e.g. 127.0.0.0/8 for a daemon on this machine.
   */
  daemonAllowedNetworks: string[];
}

/** The URL a person on this machine opens for an API listening on `host`:`port`. */
export function publicUrl(host: string | undefined, port: number): string {
  const name = !host || host === '0.0.0.0' || host === '::' ? 'localhost' : host.includes(':') ? `[${host}]` : host;
  return `http://${name}:${port}`;
}

/** The one line said when the port is taken (a second `npm start`, or another program). */
export function portInUseMessage(host: string | undefined, port: number): string {
  return `port ${port} is already in use${host ? ` on ${host}` : ''}: is netinventory (or another program) running there? Stop it or choose another PORT.`;
}

export function loadConfig(overrides: Partial<AppConfig> = {}): AppConfig {
  const env = process.env;
  return {
    port: Number(env.PORT ?? 3000),
    host: env.HOST || undefined,
    databaseUrl: env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/netinventory',
    redisUrl: env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    redisPrefix: env.REDIS_PREFIX ?? 'netinv:',
    apiVersion: 1,
    serverVersion: pkg.version,
    secureCookies: env.SECURE_COOKIES === 'true',
    createDefaultNetwork: env.CREATE_DEFAULT_NETWORK !== 'false',
    metricsToken: env.METRICS_TOKEN,
    operatorEmails: (env.OPERATOR_EMAILS ?? '').split(',').map((e) => e.trim().toLowerCase()).filter(Boolean),
    operatorOrganizationId: env.OPERATOR_ORGANIZATION_ID || undefined,
    logLevel: env.LOG_LEVEL ?? 'info',
    daemonAllowedNetworks: parseAllowedNetworks(env.DAEMON_ALLOWED_NETWORKS),
    ...overrides,
  };
}
