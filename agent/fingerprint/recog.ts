// Rapid7 Recog's fingerprints (vendor/recog/, BSD-2-Clause) matched the way Recog matches them:
// recogMatch('ssh.banner', 'OpenSSH_8.9p1 Ubuntu-3ubuntu0.6') → { description, params: {
// 'service.vendor': 'OpenBSD', 'service.version': '8.9p1', … } }. The patterns were translated from
// Ruby's regular expressions at build time (scripts/recogCompile.ts → ./recog/compiled.json).
//
// Where the table comes from: in the built agent (scripts/build.ts, one CommonJS file), esbuild
// inlines ./recog/compiled.json at the require() below. Run from source (tsx), it is read from disk,
// and compiled first (scripts/recogCompile.ts in a child process, ~2 s, once) if no build made it yet.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import type { CompiledDatabase, CompiledFingerprint, CompiledRecog } from '../../scripts/recogCompile.js';

export interface RecogMatch {
  /** Recog's description of the fingerprint that matched. */
  description: string;
  /** Recog's names: service.vendor, service.product, service.version, os.family, hw.device, service.cpe23, … */
  params: Record<string, string>;
  /** The database (its `matches`: 'http_header.server', 'ssh.banner', …). */
  database: string;
  /** The fingerprint's position in vendor/recog/xml/<file> (0-based, refused ones counted). */
  index: number;
}

interface LoadedDatabase {
  protocol?: string;
  maxInput?: number;
  fingerprints: Array<{ regex: RegExp; description: string; params: CompiledFingerprint[3]; index: number }>;
}

let databases: Map<string, LoadedDatabase> | undefined;

function readCompiled(): CompiledRecog {
  // The bundle: scripts/build.ts defines import.meta.main as true (CommonJS has no import.meta), so
  // esbuild folds this to `true` (as in agent/main.ts) and inlines the JSON at the require(). From
  // source on Node 22 import.meta.main is undefined: this module's URL. (Node 24 sets it false in a
  // module that is not the main one: then the file is looked for from the working directory.)
  const source = import.meta.main ?? (() => import.meta.url)();
  if (source === true) return require('./recog/compiled.json') as CompiledRecog;
  return readFromSource(typeof source === 'string' ? source : new URL('agent/fingerprint/recog.ts', `file://${process.cwd()}/`).href);
}

function readFromSource(moduleUrl: string): CompiledRecog {
  const file = new URL('./recog/compiled.json', moduleUrl);
  if (!existsSync(file)) execFileSync(process.execPath, ['--import', 'tsx', 'scripts/recogCompile.ts'], { cwd: new URL('../../', moduleUrl), stdio: ['ignore', 'ignore', 'inherit'] });
  return JSON.parse(readFileSync(file, 'utf8')) as CompiledRecog;
}

function load(): Map<string, LoadedDatabase> {
  if (databases) return databases;
  const compiled = readCompiled();
  const loaded = new Map<string, LoadedDatabase>();
  for (const [name, db] of Object.entries(compiled.databases) as Array<[string, CompiledDatabase]>) {
    const refused = new Set(db.refused);
    let index = 0;
    const fingerprints = db.fingerprints.map(([source, flags, description, params]) => {
      while (refused.has(index)) index++;
      return { regex: new RegExp(source, flags), description, params, index: index++ };
    });
    loaded.set(name, { protocol: db.protocol, maxInput: db.maxInput, fingerprints });
  }
  databases = loaded;
  return loaded;
}

/** The databases' names (the XML files' `matches`, or the file's name where it has none: telnet_banners). */
export function recogDatabases(): string[] {
  return [...load().keys()];
}

/**
 * The first fingerprint of the database whose pattern matches the text (Recog's order: the file's),
 * or null (also for an unknown database). Params as Recog's Fingerprint#match makes them: a capture
 * group's value (left out when the group took no part in the match), or a fixed value in which
 * `{name}` is replaced by param `name`'s value; where that param has no value, a cpe23 param takes
 * '-' for a `{….version}` (as Recog does) and any other param is left out (Recog raises there).
 * service.protocol is the database's protocol unless a param sets it.
 */
export function recogMatch(database: string, text: string): RecogMatch | null {
  const db = load().get(database);
  if (!db) return null;
  if (db.maxInput !== undefined && text.length > db.maxInput) text = text.slice(0, db.maxInput);
  for (const fp of db.fingerprints) {
    const m = fp.regex.exec(text);
    if (m) return matched(database, db, fp, m);
  }
  return null;
}

/** Only the fingerprint at `index` (its position in the XML file) of the database: Recog's check of a fingerprint's own examples. */
export function recogMatchFingerprint(database: string, index: number, text: string): RecogMatch | null {
  const db = load().get(database);
  const fp = db?.fingerprints.find((f) => f.index === index);
  if (!db || !fp) return null;
  if (db.maxInput !== undefined && text.length > db.maxInput) text = text.slice(0, db.maxInput);
  const m = fp.regex.exec(text);
  return m ? matched(database, db, fp, m) : null;
}

function matched(database: string, db: LoadedDatabase, fp: LoadedDatabase['fingerprints'][number], m: RegExpExecArray): RecogMatch {
  const params: Record<string, string> = {};
  const templates: Array<[string, string]> = [];
  for (const [name, value] of fp.params) {
    if (typeof value === 'number') {
      const captured = m[value];
      if (captured !== undefined) params[name] = captured;
    } else {
      params[name] = value;
      if (value.includes('{')) templates.push([name, value]);
    }
  }
  if (db.protocol && params['service.protocol'] === undefined) params['service.protocol'] = db.protocol;
  for (const [name] of templates) {
    let value: string | undefined = params[name]!;
    for (const [, ref] of value.matchAll(/\{([^\s{}]+)\}/g)) {
      const replacement = params[ref!] ?? (name.endsWith('.cpe23') && ref!.endsWith('.version') ? '-' : undefined);
      if (replacement === undefined) { value = undefined; break; }
      value = value.split(`{${ref}}`).join(replacement);
    }
    if (value === undefined) delete params[name];
    else params[name] = value;
  }
  return { description: fp.description, params, database, index: fp.index };
}
