// Custom service definitions' patterns (issue 38.6): the engines compared on this machine.
// 1,000 usual patterns compiled and run on 4 KiB inputs, and the classic catastrophic (a+)+$ on
// 'a'*30+'b'. RE2 native (npm re2) and RE2 WASM (npm re2-wasm) are measured when the node_modules
// holding them are given (RE2_NATIVE=…/node_modules RE2_WASM=…/node_modules): they are not
// dependencies of the project. Run: node --import tsx bench/servicePatterns.ts (EVIL_LENGTH=30: the
// unchecked JS RegExp then takes about 100 s on (a+)+$)
import { createRequire } from 'node:module';
import { checkPattern, compilePattern, MATCH_INPUT_MAX } from '../src/core/safePattern.js';

const N = 1000;
const patterns = Array.from({ length: N }, (_, i) => [
  `^SSH-2\\.0-MyDaemon_${i}\\.\\d+`,
  `(?i)<title>[^<]*Appliance ${i}[^<]*</title>`,
  `^HTTP/1\\.[01] (200|401) `,
  `"product":\\s*"widget-${i}"`,
  `^220 [\\w.-]+ ESMTP Custom${i}`,
][i % 5]!);
const filler = 'Lorem ipsum dolor sit amet, <b>consectetur</b> adipiscing elit 0123456789.\r\n';
const input = (filler.repeat(Math.ceil(MATCH_INPUT_MAX / filler.length)) + '<title>Appliance 996</title>').slice(-MATCH_INPUT_MAX);
const evil = 'a'.repeat(30) + 'b';
const ms = (t: number) => (performance.now() - t).toFixed(1);

function measure(label: string, compile: (p: string) => { exec(s: string): unknown }, worst: () => string) {
  const t = performance.now();
  const compiled = patterns.map(compile);
  const c = performance.now() - t;
  let hits = 0;
  const m = performance.now();
  for (const re of compiled) if (re.exec(input)) hits++;
  console.log(`${label}: 1000 compile ${c.toFixed(1)} ms + match on 4 KiB ${ms(m)} ms = ${ms(t)} ms (${hits} matched); (a+)+$ on a*30+b: ${worst()}`);
}

measure('JS RegExp + safePattern check (chosen)', (p) => compilePattern(p), () => {
  const t = performance.now();
  const v = checkPattern('(a+)+$');
  return `${v.ok ? 'ACCEPTED' : 'refused at validation'} in ${ms(t)} ms${v.ok ? '' : ` (${v.reason.slice(0, 60)}…)`}`;
});
measure('JS RegExp, no check', (p) => new RegExp(p.replace('(?i)', ''), p.startsWith('(?i)') ? 'i' : ''), () => {
  const n = Number(process.env.EVIL_LENGTH ?? 24); // each extra 'a' doubles the time: 30 takes minutes
  const t = performance.now();
  /(a+)+$/.exec('a'.repeat(n) + 'b');
  return `${ms(t)} ms with ${n} a`;
});
const toRe2 = (p: string) => p; // RE2 reads (?i) itself
if (process.env.RE2_NATIVE) {
  try {
    const t = performance.now();
    const RE2 = createRequire(`${process.env.RE2_NATIVE}/`)('re2');
    console.log(`re2 (native) loaded in ${ms(t)} ms`);
    measure('re2 native', (p) => new RE2(toRe2(p)), () => { const s = performance.now(); new RE2('(a+)+$').exec(evil); return `${ms(s)} ms`; });
  } catch (err) { console.log(`re2 native: ${(err as Error).message}`); }
}
if (process.env.RE2_WASM) {
  try {
    const t = performance.now();
    const { RE2 } = createRequire(`${process.env.RE2_WASM}/`)('re2-wasm');
    console.log(`re2-wasm loaded in ${ms(t)} ms`);
    measure('re2-wasm', (p) => new RE2(toRe2(p), 'u'), () => { const s = performance.now(); new RE2('(a+)+$', 'u').exec(evil); return `${ms(s)} ms`; });
  } catch (err) { console.log(`re2-wasm: ${(err as Error).message}`); }
}
