// The hosts list's `q`: one text matched against what an operator types to find a machine:
// its name or hostname (substring), one of its IP addresses (the address as text starts with q,
// so `10.0.1.2` finds 10.0.1.2 and 10.0.1.20–29) and a MAC address of an address or an interface
// (hex digits in any spelling: `aa:bb:cc`, `AA-BB-CC`, `aabb.cc`), now or at `at`.

const escapeLike = (s: string) => s.replace(/[\\%_]/g, '\\$&');

/** What a search text may be besides a name: a start of an IP address, and/or some hex digits of a MAC. */
export function searchTerms(text: string): { like: string; ipPrefix: string | null; macHex: string | null } {
  const t = text.trim();
  const ipPrefix = /^[0-9a-f:.]+$/i.test(t) && /[.:]|^\d+$/.test(t) ? t.toLowerCase() : null;
  // MAC spellings: pairs joined by ':' or '-', Cisco's groups of four joined by '.', or bare hex digits
  // (six at least, so that a word such as "cafe" or "bad" is not taken for a MAC fragment).
  const macLike = /^[0-9a-f]{2}([:-][0-9a-f]{2})+$/i.test(t) || /^[0-9a-f]{4}(\.[0-9a-f]{4})+$/i.test(t) || /^[0-9a-f]{6,12}$/i.test(t);
  const macHex = macLike ? t.replace(/[:.-]/g, '').toUpperCase() : null;
  return { like: `%${escapeLike(t)}%`, ipPrefix, macHex };
}

/**
 * A WHERE term over hosts `t` of the organization (live, or the states valid at `at`), with its
 * parameters. The children are looked up in the organization too: in its partition only.
 */
export function hostSearchClause(organizationId: string, text: string, at?: string): [string, unknown[]] {
  const { like, ipPrefix, macHex } = searchTerms(text);
  const terms = ['t.name ilike ?', 't.hostname ilike ?'];
  const params: unknown[] = [like, like];
  const child = (table: string) =>
    at
      ? `${table}_history c where c.organization_id = ? and c.host_id = t.id and tstzrange(c.valid_from, c.valid_to) @> ?::timestamptz and`
      : `${table} c where c.organization_id = ? and c.host_id = t.id and`;
  const childParams = at ? [organizationId, at] : [organizationId];
  if (ipPrefix) {
    terms.push(`exists (select 1 from ${child('ip_addresses')} host(c.ip_address) like ?)`);
    params.push(...childParams, `${escapeLike(ipPrefix)}%`);
  }
  if (macHex) {
    const mac = `upper(regexp_replace(c.mac_address, '[^0-9A-Fa-f]', '', 'g')) like ?`;
    for (const table of ['ip_addresses', 'interfaces']) {
      terms.push(`exists (select 1 from ${child(table)} ${mac})`);
      params.push(...childParams, `%${macHex}%`);
    }
  }
  return [`(${terms.join(' or ')})`, params];
}
