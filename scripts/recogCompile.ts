// Recog's fingerprints (vendor/recog/xml/, Rapid7, BSD-2-Clause) compiled for the agent's matcher
// (agent/fingerprint/recog.ts): each pattern translated from Ruby's regular expressions to
// JavaScript's and compiled with `new RegExp` here, so that a pattern JavaScript cannot take is
// refused (counted and listed, with its reason) at build time and never at run time. Writes
// agent/fingerprint/recog/compiled.json (generated, not in git): per database, the fingerprints in
// file order, each only what matching needs (source, flags, description, params).
//
// `node --import tsx scripts/recogCompile.ts` compiles and also rewrites vendor/recog/REFUSED.md;
// scripts/build.ts calls ensureRecogCompiled() before it bundles the agent (nothing is done when
// the XML and this file are those compiled.json was made from).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { XMLParser } from 'fast-xml-parser';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const RECOG_XML_DIR = `${ROOT}vendor/recog/xml/`;
export const RECOG_COMPILED = `${ROOT}agent/fingerprint/recog/compiled.json`;
export const RECOG_REFUSED_MD = `${ROOT}vendor/recog/REFUSED.md`;

/** A param: a capture group's number (1…), or a fixed value (Recog's pos="0"), which may name other params as `{name}`. */
export type CompiledParam = [name: string, value: string | number];
/** One fingerprint as the matcher needs it: the translated pattern, its flags, Recog's description, the params. */
export type CompiledFingerprint = [source: string, flags: string, description: string, params: CompiledParam[]];
export interface CompiledDatabase {
  file: string;
  /** The file's `protocol`: Recog adds it as service.protocol when no param sets that. */
  protocol?: string;
  /** Only the first maxInput characters of a text are matched (patterns that backtrack badly on long hostile input). */
  maxInput?: number;
  /** Positions (0-based, in the XML file) of the refused fingerprints, so that a match can name its fingerprint's position. */
  refused: number[];
  fingerprints: CompiledFingerprint[];
}
export interface CompiledRecog {
  /** sha256 of the XML files and of this compiler: ensureRecogCompiled() compiles again when it changes. */
  inputs: string;
  databases: Record<string, CompiledDatabase>;
}

export interface RecogExample {
  /** The text, decoded (base64 examples: UTF-8 when valid, else one character per byte). */
  text: string;
  /** Expected values (the example's attributes, those starting with `_` left out). */
  expect: Record<string, string>;
}
export interface RefusedFingerprint { database: string; file: string; index: number; description: string; pattern: string; flags: string; reason: string }
/** A loaded fingerprint with what the tests need besides (its position in the file, its examples). */
export interface LoadedFingerprint { index: number; fingerprint: CompiledFingerprint; examples: RecogExample[] }
export interface RecogCompileResult {
  databases: Record<string, CompiledDatabase & { loaded: LoadedFingerprint[] }>;
  refused: RefusedFingerprint[];
}

/**
 * Fingerprints whose pattern translates and compiles but whose own examples do not give Recog's
 * expected values in JavaScript, with why; keyed `<file>#<description>`. Each was looked at by hand.
 */
const REFUSED_BY_HAND: Record<string, string> = {};

/**
 * Inputs longer than this are cut before matching in the named databases (see maxInput): some of
 * their patterns scan quadratically or worse, and took over 25 ms (half the 50 ms budget) on a hostile
 * 16 KiB input (runs of 'a', ' ', '/', "x\n", an example followed by 16 KiB of spaces…; the worst
 * first: snmp.sys_description's Avaya ERS pattern 3.3 s, ftp.banner's Medusa 430 ms, ntp.readvar
 * 460 ms, http_header.server's MiniDLNA 310 ms, sip_header.user_agent 190 ms, html_title and
 * smtp.banner seconds). Capped, each stays under 25 ms. The fields are short anyway: sysDescr is at
 * most 255 octets, a title or an SMTP greeting line far less than 1 KiB; telnet banners keep 4 KiB
 * (their login prompt comes after the banner text).
 */
const MAX_INPUT: Record<string, number> = {
  'apache_os': 4096, 'ftp.banner': 4096, 'http_header.server': 4096, 'imap4.banner': 4096, 'ntp.readvar': 4096, 'pop3.banner': 4096,
  'sip_header.user_agent': 4096, 'telnet_banners': 4096, 'html_title': 1024, 'smtp.banner': 1024, 'snmp.sys_description': 1024,
};

// ---- Ruby (Onigmo) regular expressions → JavaScript ------------------------------------------------

export class RefusedPattern extends Error {}

const POSIX_CLASSES: Record<string, string> = {
  alpha: 'a-zA-Z', digit: '0-9', alnum: 'a-zA-Z0-9', upper: 'A-Z', lower: 'a-z', space: ' \\t\\r\\n\\v\\f',
  blank: ' \\t', punct: '!-\\/:-@\\[-`{-~', xdigit: '0-9a-fA-F', word: '\\w', cntrl: '\\x00-\\x1f\\x7f',
  print: '\\x20-\\x7e', graph: '\\x21-\\x7e', ascii: '\\x00-\\x7f',
};

interface GroupFlags { i: boolean; m: boolean; x: boolean }

/**
 * Translates one Ruby pattern with Recog's flags (REG_ICASE → i; REG_DOT_NEWLINE, REG_MULTILINE and
 * REG_LINE_ANY_CRLF → Ruby's m, i.e. dot matches newline, as Recog's RegexpFactory maps them).
 * The result keeps Ruby's meaning without JavaScript's m and s flags:
 * - Ruby's `^` and `$` are always line anchors (after/before "\n" only, where JavaScript's m flag
 *   also takes "\r", U+2028, U+2029): `(?<![^\n])` and `(?![^\n])`;
 * - `\A` → `^`, `\z` → `$` (no m flag: start and end of the text), `\Z` → `(?=\n?$)`;
 * - `.` is `[^\n]` (Ruby's dot excludes only "\n"; JavaScript's also "\r", U+2028, U+2029), and
 *   `[\s\S]` where Ruby's m is on (flags attribute, `(?m)`, `(?m:…)`), so regions may differ;
 * - `(?i)`/`(?i:…)` become the i flag when they cover the whole pattern (at its start, after
 *   anchors only, or a group around all of it); elsewhere refused (JavaScript of Node 18–22 has no
 *   modifiers); `(?x)` drops whitespace and comments; `(?#…)` comments dropped;
 * - `\h` → `[0-9a-fA-F]`, `\H` → `[^0-9a-fA-F]`, POSIX classes `[[:alpha:]]`…, `\e`, `\a`, one-digit
 *   `\xH`, `\u{H…}` (BMP), `{,n}` → `{0,n}`, a leading `]` in a class taken literally;
 * - named groups stay, and then plain groups do not capture (Ruby's rule);
 * - refused: possessive quantifiers, atomic groups `(?>…)`, conditionals, absence operators, `\G`,
 *   `\K`, `\R`, `\X`, `\g`, `\p{…}`, nested classes and `&&`, and whatever `new RegExp` rejects.
 */
export function translateRubyRegex(pattern: string, recogFlags = ''): { source: string; flags: string } {
  const base: GroupFlags = { i: false, m: false, x: false };
  for (const flag of recogFlags.split(',').map((f) => f.trim()).filter(Boolean)) {
    if (flag === 'REG_ICASE') base.i = true;
    else if (flag === 'REG_DOT_NEWLINE' || flag === 'REG_MULTILINE' || flag === 'REG_LINE_ANY_CRLF') base.m = true;
    else throw new RefusedPattern(`unknown flag ${flag}`);
  }
  // A group of inline flags around the whole pattern, `(?im:…)`, is the same as flags on it.
  const whole = /^\(\?([imx]+):/.exec(pattern);
  if (whole && closingParen(pattern, 0) === pattern.length - 1) {
    for (const f of whole[1]!) base[f as keyof GroupFlags] = true;
    pattern = pattern.slice(whole[0].length, -1);
  }
  const named = /\(\?<[A-Za-z_]\w*>|\(\?'[A-Za-z_]\w*'/.test(pattern);
  const jsI = base.i || /^(?:\^|\\A)*\(\?[mx]*i[mx]*\)/.test(pattern); // (?i) at the start, after anchors only
  const stack: GroupFlags[] = [{ ...base, i: jsI ? true : base.i }];
  let out = '';
  let i = 0;
  const cur = () => stack[stack.length - 1]!;
  const refuse = (why: string): never => { throw new RefusedPattern(`${why} at ${i}`); };
  // A case-insensitive region in a case-sensitive pattern has its letters spelled both ways ([aA]).
  const checkI = (f: GroupFlags) => { if (!f.i && jsI) refuse('a case-sensitive region inside a case-insensitive pattern'); };
  const fold = () => cur().i && !jsI;

  while (i < pattern.length) {
    const c = pattern[i]!;
    const flags = cur();
    if (flags.x && /\s/.test(c)) { i++; continue; }
    if (flags.x && c === '#') { while (i < pattern.length && pattern[i] !== '\n') i++; continue; }
    if (c === '\\') {
      const [js, len] = translateEscape(pattern, i, false, refuse);
      if (fold() && /[a-zA-Z]/.test(pattern[i + 1]!) && !/^\\[dDwWsSbBhHAzZnrtfvea]$/.test(pattern.slice(i, i + 2))) refuse(`\\${pattern[i + 1]} in a case-insensitive region`);
      out += js; i += len;
      continue;
    }
    if (c === '[') { const [js, len] = translateClass(pattern, i, fold(), refuse); out += js; i += len; continue; }
    if (c === '(') {
      if (pattern.startsWith('(?#', i)) { const end = pattern.indexOf(')', i); if (end < 0) refuse('unterminated comment'); i = end + 1; continue; }
      const inline = /^\(\?([imx]*)(?:-([imx]*))?(\)|:)/.exec(pattern.slice(i));
      if (inline && (inline[1] || inline[2])) {
        const next: GroupFlags = { ...flags };
        for (const f of inline[1]!) next[f as keyof GroupFlags] = true;
        for (const f of inline[2] ?? '') next[f as keyof GroupFlags] = false;
        if (inline[3] === ')') {
          // (?flags) sets them to the end of the enclosing group (i: only at the start, see jsI).
          checkI(next);
          stack[stack.length - 1] = next;
        } else {
          checkI(next);
          stack.push(next);
          out += '(?:';
        }
        i += inline[0].length;
        continue;
      }
      if (pattern.startsWith('(?:', i) || pattern.startsWith('(?=', i) || pattern.startsWith('(?!', i) || pattern.startsWith('(?<=', i) || pattern.startsWith('(?<!', i)) {
        const len = pattern.startsWith('(?<', i) ? 4 : 3;
        out += pattern.slice(i, i + len); i += len; stack.push({ ...flags }); continue;
      }
      const name = /^\(\?(?:<([A-Za-z_]\w*)>|'([A-Za-z_]\w*)')/.exec(pattern.slice(i));
      if (name) { out += `(?<${name[1] ?? name[2]}>`; i += name[0].length; stack.push({ ...flags }); continue; }
      if (pattern.startsWith('(?>', i)) refuse('atomic group (?>…)');
      if (pattern.startsWith('(?(', i)) refuse('conditional group (?(…)…)');
      if (pattern.startsWith('(?~', i)) refuse('absence operator (?~…)');
      if (pattern.startsWith('(?', i)) refuse(`group ${pattern.slice(i, i + 4)}`);
      out += named ? '(?:' : '('; i++; stack.push({ ...flags }); continue;
    }
    if (c === ')') { if (stack.length === 1) refuse('unbalanced )'); stack.pop(); out += ')'; i++; continue; }
    if (c === '^') { out += '(?<![^\\n])'; i++; continue; }
    if (c === '$') { out += '(?![^\\n])'; i++; continue; }
    if (c === '.') { out += flags.m ? '[\\s\\S]' : '[^\\n]'; i++; continue; }
    if (c === '*' || c === '+' || c === '?' || c === '{') {
      let len = 1;
      if (c === '{') {
        const q = /^\{(\d*)(?:(,)(\d*))?\}/.exec(pattern.slice(i));
        if (!q || (!q[1] && !q[3])) { out += '\\{'; i++; continue; } // not an interval: a literal {
        out += `{${q[1] || (q[2] ? '0' : '')}${q[2] ?? ''}${q[3] ?? ''}}`;
        len = q[0].length;
      } else out += c;
      i += len;
      const after = pattern[i];
      if (after === '?') { out += '?'; i++; } // lazy
      else if (after === '+') refuse(c === '{' ? 'a quantifier repeated ({n,m}+)' : `possessive quantifier ${c}+`);
      continue;
    }
    out += fold() && /[a-zA-Z]/.test(c) ? `[${c.toLowerCase()}${c.toUpperCase()}]` : c; i++;
  }
  if (stack.length !== 1) refuse('unbalanced (');
  const jsFlags = jsI ? 'i' : '';
  try { new RegExp(out, jsFlags); } catch (e) { throw new RefusedPattern(`JavaScript rejects the translation: ${(e as Error).message}`); }
  return { source: out, flags: jsFlags };
}

/** The position of the ) closing the group opened at `open`, or -1. */
function closingParen(pattern: string, open: number): number {
  let depth = 0;
  for (let i = open; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') { i++; continue; }
    if (c === '[') { i = classEnd(pattern, i); if (i < 0) return -1; continue; }
    if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return i;
  }
  return -1;
}

/** The position of the ] closing the class opened at `open` (POSIX `[:…:]` inside skipped), or -1. */
function classEnd(pattern: string, open: number): number {
  let i = open + 1;
  if (pattern[i] === '^') i++;
  if (pattern[i] === ']') i++;
  for (; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') { i++; continue; }
    if (c === '[' && pattern[i + 1] === ':') { const end = pattern.indexOf(':]', i + 2); if (end > 0) { i = end + 1; continue; } }
    if (c === '[') { const inner = classEnd(pattern, i); if (inner < 0) return -1; i = inner; continue; }
    if (c === ']') return i;
  }
  return -1;
}

/** One escape: [JavaScript, characters of Ruby consumed]. */
function translateEscape(pattern: string, at: number, inClass: boolean, refuse: (why: string) => never): [string, number] {
  const e = pattern[at + 1];
  if (e === undefined) refuse('trailing backslash');
  switch (e) {
    case 'A': if (inClass) break; return ['^', 2];
    case 'z': if (inClass) break; return ['$', 2];
    case 'Z': if (inClass) break; return ['(?=\\n?$)', 2];
    case 'h': return [inClass ? '0-9a-fA-F' : '[0-9a-fA-F]', 2];
    case 'H': if (inClass) refuse('\\H inside a class'); return ['[^0-9a-fA-F]', 2];
    case 'e': return ['\\x1b', 2];
    case 'a': return ['\\x07', 2];
    case 'G': case 'K': case 'R': case 'X': case 'g': case 'p': case 'P': case 'M': case 'C': case 'o':
      refuse(`\\${e}`);
      break;
    case 'x': {
      const hex = /^[0-9a-fA-F]{1,2}/.exec(pattern.slice(at + 2));
      if (!hex) refuse('\\x without hex digits');
      return [`\\x${hex![0].padStart(2, '0')}`, 2 + hex![0].length];
    }
    case 'u': {
      const braced = /^\{([0-9a-fA-F]{1,6})\}/.exec(pattern.slice(at + 2));
      if (braced) {
        const code = parseInt(braced[1]!, 16);
        if (code > 0xffff) refuse('\\u{…} beyond the BMP');
        return [`\\u${braced[1]!.padStart(4, '0')}`, 2 + braced[0].length];
      }
      return ['\\u', 2];
    }
  }
  return [`\\${e}`, 2];
}

/** A character class from `[` at `open`: [JavaScript, characters consumed]. */
function translateClass(pattern: string, open: number, fold: boolean, refuse: (why: string) => never): [string, number] {
  let i = open + 1;
  let out = '[';
  if (pattern[i] === '^') { out += '^'; i++; }
  if (pattern[i] === ']') { out += '\\]'; i++; } // Ruby takes a leading ] literally; JavaScript's [] is empty
  for (; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === ']') return [`${out}]`, i + 1 - open];
    if (c === '\\') {
      if (fold && /[a-zA-Z]/.test(pattern[i + 1] ?? '') && !/[dDwWsShnrtfvea]/.test(pattern[i + 1]!)) refuse(`\\${pattern[i + 1]} in a class of a case-insensitive region`);
      const [js, len] = translateEscape(pattern, i, true, refuse);
      out += js; i += len - 1; continue;
    }
    if (c === '[') {
      const posix = /^\[:(\^?)([a-z]+):\]/.exec(pattern.slice(i));
      if (posix) {
        if (posix[1]) refuse('negated POSIX class');
        const js = POSIX_CLASSES[posix[2]!];
        if (!js) refuse(`POSIX class [:${posix[2]}:]`);
        out += js; i += posix[0].length - 1; continue;
      }
      refuse('nested character class');
    }
    if (c === '&' && pattern[i + 1] === '&') refuse('class intersection &&');
    if (fold && pattern[i + 1] === '-' && pattern[i + 2] !== ']' && pattern[i + 2] !== undefined) {
      // A range: a-z or A-Z (or parts of them) get the other case's range too.
      const to = pattern[i + 2]!;
      if (/[a-z]/.test(c) && /[a-z]/.test(to)) out += `${c}-${to}${c.toUpperCase()}-${to.toUpperCase()}`;
      else if (/[A-Z]/.test(c) && /[A-Z]/.test(to)) out += `${c}-${to}${c.toLowerCase()}-${to.toLowerCase()}`;
      else if (/[a-zA-Z]/.test(`${c}${to}`) || to === '\\') refuse('a range in a class of a case-insensitive region');
      else out += `${c}-${to}`;
      i += 2;
      continue;
    }
    out += fold && /[a-zA-Z]/.test(c) ? `${c.toLowerCase()}${c.toUpperCase()}` : c;
  }
  return refuse('unterminated character class');
}

// ---- the XML ----------------------------------------------------------------------------------------

type XmlAttrs = Record<string, string>;
interface XmlFingerprint extends XmlAttrs { description: string | { '#text': string } | any; example?: any; param?: any }

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '',
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  // XML's five entities and numeric references (&#13;) only.
  htmlEntities: { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" },
  isArray: (name: string) => name === 'fingerprint' || name === 'example' || name === 'param',
} as unknown as ConstructorParameters<typeof XMLParser>[0]); // its typings say boolean; 5.12 takes the table too

const textOf = (node: unknown): string => (typeof node === 'string' ? node : node && typeof node === 'object' ? String((node as Record<string, unknown>)['#text'] ?? '') : '');

function decodeExample(node: unknown): RecogExample {
  const attrs: XmlAttrs = typeof node === 'object' && node ? (node as XmlAttrs) : {};
  let text = textOf(node);
  if (attrs._encoding === 'base64') {
    const bytes = Buffer.from(text, 'base64');
    const utf8 = bytes.toString('utf8');
    text = Buffer.from(utf8, 'utf8').equals(bytes) ? utf8 : bytes.toString('latin1');
  }
  const expect: Record<string, string> = {};
  for (const [k, v] of Object.entries(attrs)) if (k !== '#text' && !k.startsWith('_')) expect[k] = v;
  return { text, expect };
}

/** Compiles every vendor/recog/xml/*.xml. Throws on what Recog itself would reject (bad XML, a param without a name). */
export function compileRecog(xmlDir = RECOG_XML_DIR): RecogCompileResult {
  const databases: RecogCompileResult['databases'] = {};
  const refused: RefusedFingerprint[] = [];
  for (const file of fs.readdirSync(xmlDir).filter((f) => f.endsWith('.xml')).sort()) {
    const root = parser.parse(fs.readFileSync(`${xmlDir}/${file}`, 'utf8')).fingerprints as XmlAttrs & { fingerprint?: XmlFingerprint[] };
    if (!root) throw new Error(`${file}: no <fingerprints>`);
    // Recog's DB: the `matches` attribute, else the file's name without .xml.
    const name = root.matches ?? file.replace(/\.xml$/, '');
    if (databases[name]) throw new Error(`${file}: database ${name} also in ${databases[name].file}`);
    const db: CompiledDatabase & { loaded: LoadedFingerprint[] } = { file, ...(root.protocol ? { protocol: root.protocol.toLowerCase() } : {}), ...(MAX_INPUT[name] ? { maxInput: MAX_INPUT[name] } : {}), refused: [], fingerprints: [], loaded: [] };
    databases[name] = db;
    (root.fingerprint ?? []).forEach((fp, index) => {
      const description = textOf(fp.description).replace(/\s+/g, ' ').trim();
      const pattern = fp.pattern ?? '';
      const flags = fp.flags ?? '';
      const params: CompiledParam[] = (fp.param ?? []).map((p: XmlAttrs) => {
        if (!p.name) throw new Error(`${file}: "${description}" has a param without a name`);
        const pos = Number.parseInt(p.pos ?? '0', 10) || 0;
        return [p.name, pos > 0 ? pos : (p.value ?? '')] as CompiledParam;
      });
      const refuse = (reason: string) => { refused.push({ database: name, file, index, description, pattern, flags, reason }); db.refused.push(index); };
      const byHand = REFUSED_BY_HAND[`${file}#${description}`];
      if (byHand) return refuse(byHand);
      let translated: { source: string; flags: string };
      try {
        translated = translateRubyRegex(pattern, flags);
      } catch (e) {
        if (e instanceof RefusedPattern) return refuse(e.message);
        throw e;
      }
      const groups = new RegExp(`${translated.source}|`, translated.flags).exec('')!.length - 1;
      const missing = params.find(([, v]) => typeof v === 'number' && v > groups);
      if (missing) return refuse(`param ${missing[0]} takes group ${missing[1]}, the pattern has ${groups}`);
      const fingerprint: CompiledFingerprint = [translated.source, translated.flags, description, params];
      db.fingerprints.push(fingerprint);
      db.loaded.push({ index, fingerprint, examples: (fp.example ?? []).map(decodeExample) });
    });
  }
  return { databases, refused };
}

/** sha256 of the XML files (names and bytes) and of this compiler's source. */
export function recogInputsHash(): string {
  const hash = createHash('sha256').update(fs.readFileSync(fileURLToPath(import.meta.url)));
  for (const file of fs.readdirSync(RECOG_XML_DIR).filter((f) => f.endsWith('.xml')).sort()) hash.update(`\0${file}\0`).update(fs.readFileSync(RECOG_XML_DIR + file));
  return hash.digest('hex');
}

/** What compiled.json holds: no examples, no XML positions but the refused ones. */
export function serializeRecog(result: RecogCompileResult, inputs: string): string {
  const databases: Record<string, CompiledDatabase> = {};
  for (const [name, { loaded: _loaded, ...db }] of Object.entries(result.databases)) databases[name] = db;
  const compiled: CompiledRecog = { inputs, databases };
  return JSON.stringify(compiled);
}

/**
 * Writes agent/fingerprint/recog/compiled.json unless it was made from the same inputs (its first
 * bytes hold their hash): then it costs a hash of ~1.5 MB of XML. Returns whether it compiled.
 */
export function ensureRecogCompiled(): { compiled: boolean; refused: number } {
  const inputs = recogInputsHash();
  if (fs.existsSync(RECOG_COMPILED)) {
    const fd = fs.openSync(RECOG_COMPILED, 'r');
    const head = Buffer.alloc(100);
    try { fs.readSync(fd, head, 0, head.length, 0); } finally { fs.closeSync(fd); }
    if (head.toString('utf8').startsWith(`{"inputs":"${inputs}"`)) return { compiled: false, refused: -1 };
  }
  const result = compileRecog();
  fs.mkdirSync(new URL('.', `file://${RECOG_COMPILED}`), { recursive: true });
  const tmp = `${RECOG_COMPILED}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, serializeRecog(result, inputs));
  fs.renameSync(tmp, RECOG_COMPILED);
  return { compiled: true, refused: result.refused.length };
}

/** vendor/recog/REFUSED.md: every refused fingerprint and why, grouped by reason. */
export function refusedMarkdown(result: RecogCompileResult): string {
  const loaded = Object.values(result.databases).reduce((n, db) => n + db.fingerprints.length, 0);
  const lines = [
    '# Recog fingerprints the agent does not load',
    '',
    'Generated by `node --import tsx scripts/recogCompile.ts` (scripts/recogCompile.ts); do not edit.',
    `${Object.keys(result.databases).length} databases, ${loaded} fingerprints loaded, ${result.refused.length} refused.`,
    '',
  ];
  const reasons = new Map<string, RefusedFingerprint[]>();
  for (const r of result.refused) {
    const key = r.reason.replace(/ at \d+$/, '');
    reasons.set(key, [...(reasons.get(key) ?? []), r]);
  }
  for (const [reason, list] of reasons) {
    lines.push(`## ${reason} (${list.length})`, '');
    for (const r of list) lines.push(`- \`${r.database}\` (${r.file}, fingerprint ${r.index + 1}): ${r.description} — reason: ${r.reason}; pattern \`${r.pattern.replace(/`/g, '\\`')}\`${r.flags ? ` flags ${r.flags}` : ''}`);
    lines.push('');
  }
  return lines.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const inputs = recogInputsHash();
  const result = compileRecog();
  fs.mkdirSync(new URL('.', `file://${RECOG_COMPILED}`), { recursive: true });
  fs.writeFileSync(RECOG_COMPILED, serializeRecog(result, inputs));
  fs.writeFileSync(RECOG_REFUSED_MD, refusedMarkdown(result));
  const loaded = Object.values(result.databases).reduce((n, db) => n + db.fingerprints.length, 0);
  console.log(`${Object.keys(result.databases).length} databases, ${loaded} fingerprints, ${result.refused.length} refused → ${RECOG_COMPILED}`);
}
