// JSON Merge Patch (RFC 7396): the body of every PATCH. The patch is merged into the resource as
// read, and the result is validated and written as a PUT of it would be (src/http/resourceRoutes.ts).
import Joi from 'joi';

/**
 * Media types a PATCH body may have. application/json is taken as a merge patch too: generic
 * clients (and fetch wrappers) send it by default, and no other patch format is accepted, so it
 * cannot mean anything else here; application/json-patch+json (RFC 6902) is refused (415).
 */
export const MERGE_PATCH_TYPES = ['application/merge-patch+json', 'application/json'];

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** RFC 7396 §2: objects merge key by key, null removes a key, anything else (arrays too) replaces. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = applyMergePatch(out[key], value);
  }
  return out;
}

/**
 * The body a PATCH accepts, from the resource's update schema: every field optional and nullable,
 * with no defaults (a field left out is kept, not defaulted). Checked before the merge so a typo or
 * a wrong type is reported as sent; its output is the body as sent (`raw`), since the merge needs
 * what the client wrote ('' and null mean "clear" there). An object field is any object: it
 * is merged into the current one, and only the merged value has to be whole.
 */
export function mergePatchBody(update: Joi.ObjectSchema): Joi.ObjectSchema {
  const keys = update.describe().keys as Record<string, { type: string }>;
  return update.fork(Object.keys(keys), (field) => {
    const loose = (field.type === 'object' ? Joi.object().unknown(true) : field).optional().allow(null);
    loose.$_setFlag('default', undefined, { clone: false }); // allow() made a copy: a field left out stays out
    return loose;
  }).raw().description('A JSON merge patch (RFC 7396): the fields to change; null clears a field (or resets it to its default), an array replaces the whole list, a field left out is kept');
}
