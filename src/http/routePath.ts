// A request path as a router may read it: percent-decoded, dot segments resolved, slashes
// collapsed, any case, no trailing slash (@koa/router matches case-insensitively and with or
// without the slash). Every check made on paths before routing (rate-limit classes, the queue
// dashboard's guard) compares this form, so no spelling of a path slips past one.
export function routerPath(raw: string): string {
  if (!/[%.\\]|\/\//.test(raw)) return raw.toLowerCase().replace(/\/+$/, '') || '/'; // the usual path, cheaply
  let decoded = raw;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    /* a malformed escape: judged as sent */
  }
  let resolved = decoded;
  try {
    resolved = new URL(decoded.replace(/\\/g, '/').replace(/\/{2,}/g, '/'), 'http://x').pathname;
  } catch {
    /* not a path: judged as sent */
  }
  return resolved.toLowerCase().replace(/\/+$/, '') || '/';
}
