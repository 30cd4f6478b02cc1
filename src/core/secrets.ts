// Random tokens, their stored digests, and password hashing.
import { createHash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { setting } from './settings.js';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `length` base62 characters, uniformly distributed (rejection sampling, no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

export const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

const scryptAsync = promisify(scrypt) as (pw: string, salt: Buffer, len: number, opts: object) => Promise<Buffer>;
// scrypt is memory-hard (decisions §2); N=2^14, r=8 uses 16 MiB and about 40 ms here.
const SCRYPT = { N: 16384, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

/**
 * The cost of new hashes: N = 2^14 unless PASSWORD_HASH_COST_N says otherwise. Only the test suite
 * lowers it (test/setup.ts), where thousands of throwaway users would otherwise spend a minute in
 * scrypt; a stored hash carries its own N, so verification works whatever the setting.
 */
const scryptCostN = () => setting('PASSWORD_HASH_COST_N');

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const params = { ...SCRYPT, N: scryptCostN() };
  const hash = await scryptAsync(password, salt, 32, params);
  return `scrypt$${params.N}$${params.r}$${params.p}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await scryptAsync(password, Buffer.from(salt, 'base64'), expected.length, {
    N: Number(n), r: Number(r), p: Number(p), maxmem: SCRYPT.maxmem,
  });
  return timingSafeEqual(actual, expected);
}

/** A hash of a password nobody has, so unknown emails cost as much time as wrong passwords. */
export const DUMMY_PASSWORD_HASH = await hashPassword(randomBase62(20));
