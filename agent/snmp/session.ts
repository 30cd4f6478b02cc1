/// <reference path="./net-snmp.d.ts" />
// One SNMP session to one device, and bounded walks: each operation has a timeout, each walk a cap
// on rows and on seconds. A walk cut short (cap, timeout, the device going silent) keeps the rows it
// got and says so: the caller marks the collection "partial" and the server erases nothing.
import snmp, { type Session, type Varbind } from 'net-snmp';
import type { SnmpCredential } from './credentials.js';

export interface SnmpLimits {
  /** UDP port (161; tests use a loopback port of their own). */
  port: number;
  /** Per request, ms (net-snmp retries once more after it). */
  timeoutMs: number;
  retries: number;
  /** Rows one walk may read before it is cut short. */
  walkRows: number;
  /** Seconds one walk may take before it is cut short. */
  walkMs: number;
}

/** Scanopy 0.14 uses 5 s per op, 30 s and 10,000 entries per walk; our ops are shorter (a silent device costs less). */
export const DEFAULT_LIMITS: SnmpLimits = { port: 161, timeoutMs: 2000, retries: 1, walkRows: 10_000, walkMs: 30_000 };

export interface WalkResult {
  rows: Varbind[];
  /** Why the walk stopped before the end of the subtree; undefined when it read it all. */
  cut?: string;
}

export function openSession(ip: string, cred: SnmpCredential, limits: SnmpLimits): Session {
  const options = { port: limits.port, retries: limits.retries, timeout: limits.timeoutMs, transport: 'udp4', idBitsSize: 32 };
  if (cred.version === 'v2c') return snmp.createSession(ip, cred.community, { ...options, version: snmp.Version2c });
  const level = cred.priv ? snmp.SecurityLevel.authPriv : cred.auth ? snmp.SecurityLevel.authNoPriv : snmp.SecurityLevel.noAuthNoPriv;
  const user: Record<string, unknown> = { name: cred.user, level };
  if (cred.auth) Object.assign(user, { authProtocol: snmp.AuthProtocols[cred.auth.protocol], authKey: cred.auth.key });
  if (cred.priv) Object.assign(user, { privProtocol: snmp.PrivProtocols[cred.priv.protocol], privKey: cred.priv.key });
  return snmp.createV3Session(ip, user, { ...options, version: snmp.Version3 });
}

/** GET of scalars; a missing one (noSuchObject…) is left out. Rejects when the device does not answer. */
export function get(session: Session, oids: string[]): Promise<Map<string, unknown>> {
  return new Promise((resolve, reject) => {
    session.get(oids, (error, varbinds) => {
      if (error) return reject(error);
      resolve(new Map(varbinds.filter((v) => !snmp.isVarbindError(v)).map((v) => [v.oid, v.value])));
    });
  });
}

/** Walks `oid`'s subtree (GETBULK), within the limits; never rejects: a failure is a cut walk. */
export function walk(session: Session, oid: string, limits: SnmpLimits): Promise<WalkResult> {
  return new Promise((resolve) => {
    const rows: Varbind[] = [];
    let settled = false;
    const finish = (cut?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(cut ? { rows, cut } : { rows });
    };
    const timer = setTimeout(() => finish(`over ${Math.round(limits.walkMs / 1000)} s`), limits.walkMs);
    try {
      session.subtree(oid, 20, (varbinds) => {
        if (settled) return true;
        for (const v of varbinds) if (!snmp.isVarbindError(v)) rows.push(v);
        if (rows.length >= limits.walkRows) {
          rows.length = limits.walkRows;
          finish(`over ${limits.walkRows} rows`);
          return true;
        }
        return false;
      }, (error) => finish(error ? `${error.message || error.name}`.slice(0, 120) : undefined));
    } catch (err) {
      finish((err as Error).message);
    }
  });
}

/** The OID's sub-identifiers after `base` (the row index), or null when it is not under base. */
export function indexOf(oid: string, base: string): number[] | null {
  return oid.startsWith(`${base}.`) ? oid.slice(base.length + 1).split('.').map(Number) : null;
}
