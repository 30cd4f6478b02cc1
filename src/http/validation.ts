// A request that fails its joi schema becomes one 400 that lists every problem at once
// (`params.errors`), with the first one also in `field`/`reason` as before. An unknown field comes
// first and names the closest known field, because a misspelt key is the usual cause of the
// "`x` is required" that would otherwise be reported.
import Joi from 'joi';
import { AppError } from '../core/errors.js';

export interface FieldError {
  field: string;
  code: string;
  message: string;
}

/** Edit distance (insert, delete, substitute), small strings only. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length]!;
}

/** The known name an unknown one most likely meant: a prefix either way (`network` → `network_id`) or a typo or two. */
export function closestName(unknown: string, known: readonly string[]): string | undefined {
  const u = unknown.toLowerCase();
  let best: { name: string; score: number } | undefined;
  for (const name of known) {
    const n = name.toLowerCase();
    const distance = editDistance(u, n);
    const affix = n.startsWith(u) || u.startsWith(n) || n.endsWith(u) || u.endsWith(n);
    const close = distance <= Math.max(1, Math.floor(Math.max(u.length, n.length) / 4));
    if (!affix && !close) continue;
    if (!best || distance < best.score) best = { name, score: distance };
  }
  return best?.name;
}

/** The keys an object schema declares at `path` (array indices step into `items`). */
export function knownKeysAt(schema: Joi.Schema | undefined, path: ReadonlyArray<string | number>): string[] {
  let d: any = schema?.describe();
  for (const step of path) {
    if (!d) return [];
    if (typeof step === 'number') d = d.items?.[0];
    else d = d.keys?.[step];
  }
  // Stripped keys (server-owned fields a client may echo back) are never worth suggesting.
  return d?.keys ? Object.keys(d.keys).filter((k) => d.keys[k].flags?.result !== 'strip') : [];
}

const where = (location: 'body' | 'query' | 'params', path: string) => (location === 'body' ? path || 'body' : path ? `${location}.${path}` : location);

export function fromJoi(err: Joi.ValidationError, location: 'body' | 'query' | 'params', schema?: Joi.Schema): AppError {
  const errors: Array<FieldError & { hint?: string }> = err.details.map((d) => {
    const field = where(location, d.path.join('.'));
    if (d.type === 'object.unknown') {
      const key = String(d.path[d.path.length - 1] ?? d.context?.key ?? field);
      const hint = closestName(key, knownKeysAt(schema, d.path.slice(0, -1)));
      const message = `unknown field \`${field}\`${hint ? `; did you mean \`${hint}\`?` : ''}`;
      return { field, code: 'unknown_field', message, hint };
    }
    const code = d.type === 'any.required' ? 'required' : d.type.replace(/\./g, '_');
    return { field, code, message: d.message.replace(/"/g, "'") };
  });
  // Unknown fields first: "`network_id` is required" is usually the echo of a misspelt `network`.
  // Among them, the outermost first.
  const rank = (e: FieldError) => (e.code === 'unknown_field' ? e.field.split('.').length : 1000);
  errors.sort((a, b) => rank(a) - rank(b));
  const listed = errors.map(({ field, code, message }) => ({ field, code, message }));
  const first = errors[0]!;
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more: see params.errors)` : '';
  if (first.code === 'unknown_field') {
    const message = `${first.message[0]!.toUpperCase()}${first.message.slice(1)}${more}`;
    return new AppError('validation_unknown_field', { field: first.field, ...(first.hint ? { did_you_mean: first.hint } : {}), errors: listed }, message);
  }
  return new AppError('validation_failed', { field: first.field, reason: first.message, errors: listed }, `Validation failed: ${first.message}${more}`);
}
