// SNMP credentials: from the command line (--snmp-community, --snmp-v3) and from the server's
// Network discovery type (snmp_credentials {default_credential, ip_overrides}). A device gets every
// credential that may fit it, its own override first; the walk tries them in turn until one answers.
// Secrets never leave this module in text: a credential is named by `credentialLabel`.
import { isMasked } from '../../src/core/secretFields.js';

export const AUTH_PROTOCOLS = ['md5', 'sha', 'sha224', 'sha256', 'sha384', 'sha512'] as const;
export const PRIV_PROTOCOLS = ['des', 'aes', 'aes256b', 'aes256r'] as const;
export type AuthProtocol = (typeof AUTH_PROTOCOLS)[number];
export type PrivProtocol = (typeof PRIV_PROTOCOLS)[number];

export type SnmpCredential =
  | { version: 'v2c'; community: string }
  | { version: 'v3'; user: string; auth?: { protocol: AuthProtocol; key: string }; priv?: { protocol: PrivProtocol; key: string } };

/** Credentials for one address: its override (if any) first, then the others, no duplicates. */
export interface SnmpCredentials {
  /** Tried on every device. */
  all: SnmpCredential[];
  /** Tried first (before `all`) on that address. */
  byIp?: Record<string, SnmpCredential[]>;
}

export function credentialsFor(creds: SnmpCredentials | undefined, ip: string): SnmpCredential[] {
  if (!creds) return [];
  const list = [...(creds.byIp?.[ip] ?? []), ...creds.all];
  const seen = new Set<string>();
  return list.filter((c) => {
    const key = JSON.stringify(c);
    return seen.has(key) ? false : (seen.add(key), true);
  });
}

/** A name for logs and reports: the version and user, never a community or a key. */
export function credentialLabel(c: SnmpCredential): string {
  return c.version === 'v2c' ? 'v2c community' : `v3 user ${c.user} (${c.priv ? 'authPriv' : c.auth ? 'authNoPriv' : 'noAuthNoPriv'})`;
}

export class CredentialError extends Error {}

/**
 * `user`, `user:authproto:authpass` or `user:authproto:authpass:privproto:privpass` (a pass
 * containing ':' is not supported: say so rather than guess where it ends).
 */
export function parseV3(text: string): SnmpCredential {
  const parts = text.split(':');
  const [user, authProtocol, authKey, privProtocol, privKey] = parts;
  if (!user || ![1, 3, 5].includes(parts.length)) {
    throw new CredentialError(`--snmp-v3 must be user[:authproto:authpass[:privproto:privpass]], not ${parts.length} ':'-separated parts`);
  }
  const cred: SnmpCredential = { version: 'v3', user };
  if (authProtocol !== undefined) {
    if (!(AUTH_PROTOCOLS as readonly string[]).includes(authProtocol.toLowerCase())) throw new CredentialError(`--snmp-v3: auth protocol must be one of ${AUTH_PROTOCOLS.join(', ')}, not '${authProtocol}'`);
    if (!authKey || authKey.length < 8) throw new CredentialError('--snmp-v3: the auth password needs at least 8 characters (RFC 3414)');
    cred.auth = { protocol: authProtocol.toLowerCase() as AuthProtocol, key: authKey };
  }
  if (privProtocol !== undefined) {
    if (!(PRIV_PROTOCOLS as readonly string[]).includes(privProtocol.toLowerCase())) throw new CredentialError(`--snmp-v3: priv protocol must be one of ${PRIV_PROTOCOLS.join(', ')}, not '${privProtocol}'`);
    if (!privKey || privKey.length < 8) throw new CredentialError('--snmp-v3: the priv password needs at least 8 characters (RFC 3414)');
    cred.priv = { protocol: privProtocol.toLowerCase() as PrivProtocol, key: privKey };
  }
  return cred;
}

/**
 * One credential of a Scanopy discovery type: `{version: "V2c", community}`; a `V3` one is ours
 * (Scanopy 0.14 has no v3): `{version: "V3", user, auth_protocol?, auth_password?, priv_protocol?, priv_password?}`.
 * Anything else (or one with a masked secret: core/secretFields.ts) is skipped.
 */
export function fromScanopy(raw: unknown): SnmpCredential | null {
  if (!raw || typeof raw !== 'object') return null;
  const c = raw as Record<string, unknown>;
  const version = String(c.version ?? '').toLowerCase();
  if (version === 'v2c' || version === 'v1') {
    return typeof c.community === 'string' && c.community && !isMasked(c.community) ? { version: 'v2c', community: c.community } : null;
  }
  if (version === 'v3' && typeof c.user === 'string' && c.user && !isMasked(c.auth_password) && !isMasked(c.priv_password)) {
    try {
      const parts = [c.user, c.auth_protocol, c.auth_password, c.priv_protocol, c.priv_password].filter((p) => typeof p === 'string' && p) as string[];
      return parseV3(parts.join(':'));
    } catch {
      return null;
    }
  }
  return null;
}

/** The discovery type's snmp_credentials merged with the command line's (the command line's tried after). */
export function mergeCredentials(snmpCredentials: unknown, commandLine: SnmpCredential[]): SnmpCredentials | undefined {
  const sc = (snmpCredentials ?? {}) as { default_credential?: unknown; ip_overrides?: Array<{ ip?: unknown; credential?: unknown }> };
  const all: SnmpCredential[] = [];
  const fromDefault = fromScanopy(sc.default_credential);
  if (fromDefault) all.push(fromDefault);
  all.push(...commandLine);
  const byIp: Record<string, SnmpCredential[]> = {};
  for (const o of Array.isArray(sc.ip_overrides) ? sc.ip_overrides : []) {
    const cred = fromScanopy(o?.credential);
    if (cred && typeof o.ip === 'string') (byIp[o.ip] ??= []).push(cred);
  }
  return all.length || Object.keys(byIp).length ? { all, byIp } : undefined;
}
