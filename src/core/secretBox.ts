// Credentials the server must use again in plaintext (a webhook's signing secrets, the key it
// presents to a server_poll daemon, SNMP credentials waiting for their daemon) are stored sealed:
// AES-256-GCM under a key this module holds, never in the database. A sealed value is text,
// `enc:v1:<key id>:<base64 of iv ‖ tag ‖ ciphertext>`, so it fits the columns that held plaintext;
// the additional data names what the value is for (a webhook's secret cannot be moved into a
// daemon's key column and still open).
//
// The keys: SECRETS_KEY (comma-separated, base64 of 32 bytes each), or the key file SECRETS_KEY_FILE
// (one key per line; made on first start, mode 0600, when neither exists). The first key seals; every
// key opens, so a rotation is: put a new key first, restart every process, `npm run secrets -- rotate`
// (re-seals every value under the first key), then drop the old key (docs/secrets.md).
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { closeSync, linkSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';
import { ACROSS_ORGANIZATIONS, type Db } from './db.js';
import { SECRET_FIELDS, SECRET_MASK } from './secretFields.js';

export interface SecretKey { id: string; key: Buffer }

const PREFIX = 'enc:v1:';
const SEALED = /^enc:v1:([0-9a-f]{8}):([A-Za-z0-9+/=]+)$/;

let ring: SecretKey[] | undefined;

export const keyId = (key: Buffer) => createHash('sha256').update(key).digest('hex').slice(0, 8);

/** A key as written in SECRETS_KEY or the key file. */
export const newSecretKeyText = () => randomBytes(32).toString('base64');

export function parseSecretKeys(text: string, source: string): SecretKey[] {
  const words = text.split('\n').filter((line) => !line.trim().startsWith('#')).join(',').split(/[\s,]+/).filter(Boolean);
  const keys = words.map((t) => {
    const key = Buffer.from(t, 'base64');
    if (key.length !== 32 || key.toString('base64') !== t) throw new Error(`${source}: each key must be 32 bytes in base64 (44 characters; make one with \`npm run secrets -- new-key\`)`);
    return { id: keyId(key), key };
  });
  if (!keys.length) throw new Error(`${source} holds no key`);
  return keys;
}

/**
 * The keys from SECRETS_KEY, else from the key file, which is made (0600, atomically: a process
 * starting beside this one reads the same key) when it does not exist.
 */
export function loadSecretKeys(config: { secretsKey: string | undefined; secretsKeyFile: string }): SecretKey[] {
  if (config.secretsKey) return parseSecretKeys(config.secretsKey, 'SECRETS_KEY');
  const file = config.secretsKeyFile;
  try {
    return parseSecretKeys(readFileSync(file, 'utf8'), file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  const fd = openSync(draft, 'wx', 0o600);
  try {
    writeSync(fd, `# netinventory's key for credentials stored in the database (docs/secrets.md). Keep a copy: without it they cannot be read.\n${newSecretKeyText()}\n`);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(draft, file); // fails if another process made it first: then its key is the key
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    unlinkSync(draft);
  }
  return parseSecretKeys(readFileSync(file, 'utf8'), file);
}

/** The keys this process seals and opens with (set once at start by createServices / createWorkerServices). */
export function useSecretKeys(keys: SecretKey[]): void {
  ring = keys;
}

function keys(): SecretKey[] {
  if (!ring) throw new Error('secret keys not loaded (useSecretKeys)');
  return ring;
}

export const isSealed = (value: unknown): value is string => typeof value === 'string' && value.startsWith(PREFIX);

/** The key id a sealed value was sealed with. */
export const sealedKeyId = (value: string) => SEALED.exec(value)?.[1];

/** `plain` sealed under the first key; `purpose` must be given again to open it. */
export function seal(plain: string, purpose: string): string {
  const { id, key } = keys()[0]!;
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(purpose));
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return `${PREFIX}${id}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
}

/**
 * The plaintext of a sealed value. A value that is not sealed is returned as it is: rows written
 * before sealing existed, sealed by the first start after the upgrade (sealLegacy).
 */
export function open(value: string, purpose: string): string {
  if (!isSealed(value)) return value;
  const m = SEALED.exec(value);
  const entry = m && keys().find((k) => k.id === m[1]);
  if (!m || !entry) throw new Error(`a stored credential was sealed with key ${m?.[1] ?? '(unreadable)'}, which this process does not have (SECRETS_KEY / SECRETS_KEY_FILE)`);
  const raw = Buffer.from(m[2]!, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', entry.key, raw.subarray(0, 12));
  decipher.setAAD(Buffer.from(purpose));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}

/** What a discovery type's credentials are sealed for. */
const CREDENTIAL = 'discovery-credential';

function mapSecrets<T>(value: T, f: (v: string) => string): T {
  if (Array.isArray(value)) return value.map((v) => mapSecrets(v, f)) as T;
  if (value && typeof value === 'object') {
    // The mask (what a daemon's own report stores) is no secret: left as it is.
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, SECRET_FIELDS.includes(k) && typeof v === 'string' && v !== SECRET_MASK ? f(v) : mapSecrets(v, f)])) as T;
  }
  return value;
}

/** A discovery type with every secret field (core/secretFields.ts) sealed, as it is stored. */
export const sealSecrets = <T>(value: T): T => mapSecrets(value, (v) => (isSealed(v) ? v : seal(v, CREDENTIAL)));
/** A stored discovery type with its secrets opened, for the daemon that needs them. */
export const openSecrets = <T>(value: T): T => mapSecrets(value, (v) => open(v, CREDENTIAL));
/** A stored discovery type re-sealed under the first key (rotation). */
export const resealSecrets = <T>(value: T): T => mapSecrets(value, (v) => (sealedKeyId(v) === keys()[0]!.id ? v : seal(open(v, CREDENTIAL), CREDENTIAL)));

/** What a webhook's signing secrets (current and previous) are sealed for. */
export const WEBHOOK_SECRET = 'webhook-secret';
/** What the key the server presents to a server_poll daemon is sealed for. */
export const DAEMON_SERVER_KEY = 'daemon-server-key';

/**
 * Every stored column that holds a sealed credential: the one list that sealing legacy rows,
 * rotation and the status report (scripts/secrets.ts) walk, and that test/core/secretBox.spec.ts
 * compares with the schema's columns that could hold one.
 */
export const SEALED_COLUMNS: readonly { table: string; column: string; purpose: string; json?: true }[] = [
  { table: 'webhooks', column: 'secret', purpose: WEBHOOK_SECRET },
  { table: 'webhooks', column: 'previous_secret', purpose: WEBHOOK_SECRET },
  { table: 'daemon_api_keys', column: 'server_key', purpose: DAEMON_SERVER_KEY },
  { table: 'discovery_sessions', column: 'discovery_type', purpose: CREDENTIAL, json: true },
];

/**
 * Seals what is stored in plaintext (rows written before sealing existed, or planted by hand) and,
 * with `rotate`, re-seals what another key sealed, under the first key. Each row is replaced only if
 * it still holds what was read, so processes doing this at once (every API process at start) never
 * seal a sealed value twice. Returns the rows changed per column.
 */
export async function sealStoredSecrets(db: Db, rotate = false): Promise<Record<string, number>> {
  const current = keys()[0]!.id;
  const done: Record<string, number> = {};
  for (const c of SEALED_COLUMNS) {
    const name = `${c.table}.${c.column}`;
    done[name] = 0;
    if (c.json) {
      // Only types with a secret field holding a string (not the mask, not null) can need it.
      const rows = await db.query<{ id: string; value: unknown }>(
        `${ACROSS_ORGANIZATIONS} select id, ${c.column} as value from ${c.table}
         where ${c.column}::text ~ '"(${SECRET_FIELDS.join('|')})": "'`,
      );
      for (const row of rows) {
        const next = rotate ? resealSecrets(row.value) : sealSecrets(row.value);
        if (!rotate && !needsSealing(row.value)) continue;
        if (JSON.stringify(next) === JSON.stringify(row.value)) continue;
        const changed = await db.query(`${ACROSS_ORGANIZATIONS} update ${c.table} set ${c.column} = ?::jsonb where id = ? and ${c.column} = ?::jsonb returning id`,
          [JSON.stringify(next), row.id, JSON.stringify(row.value)]);
        done[name] += changed.length;
      }
    } else {
      const rows = await db.query<{ id: string; value: string }>(
        `${ACROSS_ORGANIZATIONS} select id, ${c.column} as value from ${c.table} where ${c.column} is not null and ${c.column} not like ?`,
        [rotate ? `${PREFIX}${current}:%` : `${PREFIX}%`],
      );
      for (const row of rows) {
        const changed = await db.query(`${ACROSS_ORGANIZATIONS} update ${c.table} set ${c.column} = ? where id = ? and ${c.column} = ? returning id`,
          [seal(open(row.value, c.purpose), c.purpose), row.id, row.value]);
        done[name] += changed.length;
      }
    }
  }
  return done;
}

/** Whether a stored discovery type holds a secret in plaintext. */
function needsSealing(value: unknown): boolean {
  let plain = false;
  mapSecrets(value, (v) => { if (!isSealed(v)) plain = true; return v; });
  return plain;
}

/** Stored sealed values per key id, and those still in plaintext (`npm run secrets -- status`). */
export async function sealedStatus(db: Db): Promise<Record<string, Record<string, number>>> {
  const out: Record<string, Record<string, number>> = {};
  for (const c of SEALED_COLUMNS) {
    const counts: Record<string, number> = {};
    const rows = await db.query<{ value: unknown }>(`${ACROSS_ORGANIZATIONS} select ${c.column} as value from ${c.table} where ${c.column} is not null`);
    for (const { value } of rows) {
      const found: string[] = [];
      if (c.json) mapSecrets(value, (v) => { found.push(v); return v; });
      else found.push(value as string);
      for (const v of found) {
        const k = isSealed(v) ? `key ${sealedKeyId(v)}` : 'plaintext';
        counts[k] = (counts[k] ?? 0) + 1;
      }
    }
    out[`${c.table}.${c.column}`] = counts;
  }
  return out;
}
