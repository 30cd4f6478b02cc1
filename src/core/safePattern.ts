// Users' regular expressions (custom service definitions) that can never backtrack
// without bound: checked once here, by the server when a definition is written (400 on
// `match.pattern` with the reason) and by the agent when it receives one (the same module: the agent
// imports it, as it does src/core/secretFields.ts), then run by JS RegExp on at most
// MATCH_INPUT_MAX characters. Measured against RE2 (native and WASM): docs/service-definitions.md.
//
// What is refused, and why:
// - backreferences (\1, \k<name>) and lookaround ((?=, (?!, (?<=, (?<!): no linear-time engine runs
//   them (RE2 refuses them too), and they are how exponential patterns hide;
// - a repeated group that holds a quantifier ((a+)+, (a*b)*, (\w+\s?){2,}): the classic exponential
//   backtracking (star height 2);
// - a repeated group that holds an alternation ((a|ab)*, (x|x)+): overlapping alternatives repeated
//   are exponential too (use a character class: [ab]+);
// - counted repetition above {,100}, patterns longer than PATTERN_MAX_LENGTH;
// - then, measured: a pattern that still takes more than CHECK_BUDGET_MS on a few dozen adversarial
//   inputs of MATCH_INPUT_MAX characters together (polynomial backtracking: \d+\d+\d+x, .*a.*b.*c on the
//   wrong input). What passes runs in at most about that on any input the agent gives it (inputs are
//   cut to MATCH_INPUT_MAX), measured by test/serviceDefinitions/safePattern.spec.ts.
// Flags: none (case-sensitive) unless the pattern starts with `(?i)`, RE2's way to say case-insensitive.
import vm from 'node:vm';

export const PATTERN_MAX_LENGTH = 500;
/** Inputs are cut to this many characters before a user's pattern reads them. */
export const MATCH_INPUT_MAX = 4096;
/** A pattern slower than this on the adversarial inputs (about 40 of MATCH_INPUT_MAX characters) together is refused. */
export const CHECK_BUDGET_MS = 100;
const MAX_COUNT = 100;

export type PatternVerdict = { ok: true; source: string; flags: string } | { ok: false; reason: string };

/** A user's pattern, its input cut to MATCH_INPUT_MAX characters (exec, test and match all go through exec). */
export class SafeRegExp extends RegExp {
  override exec(input: string): RegExpExecArray | null {
    return super.exec(input.length > MATCH_INPUT_MAX ? input.slice(0, MATCH_INPUT_MAX) : input);
  }
}

interface Frame {
  quantified: boolean; // holds a quantifier
  alternation: boolean; // holds a | at its own level
}

/** The structural check: the first reason the pattern is refused, or null. */
function structure(p: string): string | null {
  const stack: Frame[] = [{ quantified: false, alternation: false }];
  // The last atom: what a quantifier applies to (a closed group's frame, or a plain atom).
  let last: { group?: Frame } | null = null;
  for (let i = 0; i < p.length; i++) {
    const c = p[i]!;
    const top = stack[stack.length - 1]!;
    if (c === '\\') {
      const n = p[i + 1];
      if (n === undefined) return 'ends with a lone backslash';
      if (/[1-9]/.test(n)) return `backreference \\${n} at ${i}: not supported (no linear-time engine runs backreferences)`;
      if (n === 'k' && p[i + 2] === '<') return `named backreference at ${i}: not supported (no linear-time engine runs backreferences)`;
      if (n === 'u' && p[i + 2] === '{') i = Math.max(i + 2, p.indexOf('}', i));
      else if (n === 'u') i += 5;
      else if (n === 'x') i += 3;
      else if (n === 'c') i += 2;
      else i += 1;
      last = /[bB]/.test(n) ? null : {};
      continue;
    }
    if (c === '[') {
      let j = i + 1;
      if (p[j] === '^') j++;
      if (p[j] === ']') j++; // "[]" is empty in JS; "[]a]" is refused by RegExp below anyway
      for (; j < p.length && p[j] !== ']'; j++) if (p[j] === '\\') j++;
      if (j >= p.length) return `unterminated character class at ${i}`;
      i = j;
      last = {};
      continue;
    }
    if (c === '(') {
      if (p[i + 1] === '?') {
        const kind = p.slice(i + 2, i + 4);
        if (kind.startsWith('=') || kind.startsWith('!') || kind === '<=' || kind === '<!') {
          return `lookaround (?${kind.startsWith('<') ? kind : kind[0]} at ${i}: not supported (no linear-time engine runs lookaround)`;
        }
        if (!(kind.startsWith(':') || (kind.startsWith('<') && /^[A-Za-z_$]/.test(kind[1] ?? '')))) return `group (?${kind[0] ?? ''} at ${i}: not supported (use (…), (?:…) or (?<name>…))`;
      }
      stack.push({ quantified: false, alternation: false });
      last = null;
      continue;
    }
    if (c === ')') {
      if (stack.length === 1) return `unmatched ) at ${i}`;
      const closed = stack.pop()!;
      const parent = stack[stack.length - 1]!;
      if (closed.quantified) parent.quantified = true;
      last = { group: closed };
      continue;
    }
    if (c === '|') {
      top.alternation = true;
      last = null;
      continue;
    }
    let max: number | null = null; // null: not a quantifier; Infinity: unbounded
    let end = i;
    if (c === '*' || c === '+') max = Infinity;
    else if (c === '?') max = 1;
    else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(p.slice(i));
      if (m) {
        const lo = Number(m[1]);
        const hi = m[2] ? (m[3] ? Number(m[3]) : Infinity) : lo;
        if (lo > MAX_COUNT || (hi !== Infinity && hi > MAX_COUNT)) return `counted repetition ${m[0]} at ${i}: at most {${MAX_COUNT}}`;
        if (hi !== Infinity && hi < lo) return `counted repetition ${m[0]} at ${i}: out of order`;
        max = hi;
        end = i + m[0].length - 1;
      }
    }
    if (max === null) {
      last = {};
      continue;
    }
    if (!last) return `quantifier ${p.slice(i, end + 1)} at ${i} follows nothing it can repeat`;
    if (last.group && max > 1) {
      if (last.group.quantified) return `a repeated group holds a quantifier (…${p.slice(i, end + 1)} at ${i}): nested repetition backtracks exponentially, e.g. (a+)+`;
      if (last.group.alternation) return `a repeated group holds an alternation (…${p.slice(i, end + 1)} at ${i}): repeated alternatives backtrack exponentially, e.g. (a|ab)*; use a character class`;
    }
    top.quantified = true;
    if (p[end + 1] === '?') end++; // lazy
    i = end;
    last = null; // a quantifier after a quantifier is a syntax error (RegExp says so)
  }
  if (stack.length > 1) return 'unterminated group';
  return null;
}

/** Adversarial inputs: each character the pattern names (and a few usual ones) repeated, and its literal runs repeated. */
function adversarialInputs(source: string): string[] {
  const chars = new Set<string>(['a', ' ', '0', 'x', '\n', '/', '.']);
  for (const ch of source.replace(/\\[dDwWsSbB]/g, '')) if (!'\\()[]{}*+?|^$'.includes(ch)) chars.add(ch);
  const inputs = [...chars].slice(0, 40).map((ch) => ch.repeat(MATCH_INPUT_MAX));
  const literal = source.replace(/\\(.)/g, '$1').replace(/[()[\]{}*+?|^$]/g, '');
  if (literal) {
    inputs.push(literal.repeat(Math.ceil(MATCH_INPUT_MAX / literal.length)).slice(0, MATCH_INPUT_MAX));
    inputs.push((literal + ' ').repeat(Math.ceil(MATCH_INPUT_MAX / (literal.length + 1))).slice(0, MATCH_INPUT_MAX));
  }
  return inputs;
}

const timed = new vm.Script('for (at = 0; at < inputs.length; at++) re.exec(inputs[at]);');

/**
 * Whether a user's pattern is one the agent may run: the structural check, the syntax (RegExp), then
 * the measured check, all inputs in one run interrupted after CHECK_BUDGET_MS (vm timeout: a regex run can be stopped).
 */
export function checkPattern(pattern: string): PatternVerdict {
  if (typeof pattern !== 'string' || !pattern.length) return { ok: false, reason: 'is empty' };
  if (pattern.length > PATTERN_MAX_LENGTH) return { ok: false, reason: `is longer than ${PATTERN_MAX_LENGTH} characters` };
  let source = pattern;
  let flags = '';
  if (source.startsWith('(?i)')) {
    source = source.slice(4);
    flags = 'i';
  }
  const why = structure(source);
  if (why) return { ok: false, reason: why };
  let re: RegExp;
  try {
    re = new RegExp(source, flags);
  } catch (err) {
    return { ok: false, reason: `is not a regular expression: ${(err as Error).message.replace(/^Invalid regular expression: /, '')}` };
  }
  const inputs = adversarialInputs(source);
  const context = vm.createContext({ re, inputs, at: 0 });
  try {
    timed.runInContext(context, { timeout: CHECK_BUDGET_MS });
  } catch (err) {
    if ((err as { code?: string }).code !== 'ERR_SCRIPT_EXECUTION_TIMEOUT') throw err;
    const input = inputs[context.at as number] ?? 'a';
    return { ok: false, reason: `takes more than ${CHECK_BUDGET_MS} ms on ${MATCH_INPUT_MAX}-character inputs (stopped on one of ${JSON.stringify(input[0])}): polynomial backtracking; use fewer unbounded repetitions that can match the same text, e.g. not .*a.*b.*c` };
  }
  return { ok: true, source, flags };
}

/** The pattern ready to run (throws with the reason when it is refused). */
export function compilePattern(pattern: string): SafeRegExp {
  const verdict = checkPattern(pattern);
  if (!verdict.ok) throw new Error(`pattern ${verdict.reason}`);
  return new SafeRegExp(verdict.source, verdict.flags);
}
