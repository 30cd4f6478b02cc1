// PostgreSQL stores no U+0000 in text or jsonb: one NUL in a banner a daemon quoted (an AMQP
// version byte, a binary greeting) made it refuse the whole report, and the host was lost with all
// its services. So a daemon's report is cleaned before it is validated: a string holding a NUL is
// dropped where the report can do without it (an optional field, a fact, an element of a list), and
// has its NULs replaced by U+FFFD where it cannot (the names and ids the report needs).
import Joi from 'joi';

/** Keys a report cannot lose: their NULs become U+FFFD instead. */
const KEPT = new Set(['id', 'name', 'service_definition', 'type', 'ip_address', 'cidr', 'network_id', 'subnet_id', 'host_id', 'port_id', 'interface_id']);
const REPLACEMENT = '\uFFFD';

/** `value` without NUL characters (a copy only where something changed), and the paths it dropped or replaced. */
export function withoutNul(value: unknown, path = '', changed: string[] = []): { value: unknown; changed: string[] } {
  const walk = (v: unknown, at: string, key: string | null): { keep: boolean; v: unknown } => {
    if (typeof v === 'string') {
      if (!v.includes('\u0000')) return { keep: true, v };
      changed.push(at);
      return KEPT.has(key ?? '') ? { keep: true, v: v.replace(/\u0000/g, REPLACEMENT) } : { keep: false, v: undefined };
    }
    if (Array.isArray(v)) {
      let copy: unknown[] | null = null;
      v.forEach((item, i) => {
        const r = walk(item, `${at}[${i}]`, null);
        if (r.keep && r.v === item && !copy) return;
        copy ??= v.slice(0, i);
        if (r.keep) copy.push(r.v);
      });
      return { keep: true, v: copy ?? v };
    }
    if (v && typeof v === 'object') {
      let copy: Record<string, unknown> | null = null;
      for (const [k, item] of Object.entries(v)) {
        const r = walk(item, at ? `${at}.${k}` : k, k);
        if (r.keep && r.v === item) continue;
        copy ??= { ...(v as Record<string, unknown>) };
        if (r.keep) copy[k] = r.v;
        else delete copy[k];
      }
      return { keep: true, v: copy ?? v };
    }
    return { keep: true, v };
  };
  return { value: walk(value, path, null).v, changed };
}

/** Joi whose `object()` cleans its value with withoutNul before validating it (the top of a daemon's report). */
export const StorableJoi: Joi.Root = Joi.extend({
  type: 'object',
  base: Joi.object(),
  prepare: (value: unknown) => ({ value: withoutNul(value).value }),
});
