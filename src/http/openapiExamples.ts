// Examples for the OpenAPI document, derived from the schemas so every request body and parameter
// has one that validates: a field's own joi `.example()` first, then a plausible value by field
// name (FIELD_EXAMPLES), then one by format or type. A body's example holds its required fields and
// the ones a reader most likely wants (those with a plausible value); lists hold one item.
type Json = Record<string, any>;

const ID = '3f1c2a9e-7b1d-4c55-9a7e-0c1d2e3f4a5b';
const FIELD_EXAMPLES: Record<string, unknown> = {
  name: 'web-01', hostname: 'web-01.lan', description: 'Front web server', email: 'ada@example.com',
  password: 'correct horse battery staple', organization_name: 'Example Networks', cidr: '192.168.1.0/24',
  ip_address: '192.168.1.10', mac_address: 'AA:BB:CC:DD:EE:01', number: 443, protocol: 'Tcp',
  service_definition: 'Nginx', color: 'Blue', url: 'https://hooks.example.com/netinventory', event_types: ['host.*', 'service.created'],
  if_index: 1, if_name: 'eth0', at: '2026-11-01T12:00:00Z', since: '2026-11-01T12:00:00Z', expires_at: '2027-01-01T00:00:00Z',
  permissions: 'Member', view: 'l3', format: 'svg', types: 'host.*,service.created', q: 'web', limit: 50, offset: 0,
};

function resolve(schema: Json, components: Json): Json {
  const ref = schema?.$ref as string | undefined;
  return ref ? resolve(components[ref.split('/').pop()!], components) : schema;
}

export function exampleOf(schema: Json | undefined, components: Json, field?: string, depth = 0): unknown {
  if (!schema || depth > 6) return undefined;
  const s = resolve(schema, components);
  if (!s) return undefined;
  if (s.examples?.length) return s.examples[0];
  if (s.default !== undefined && s.default !== null && s.default !== '' && !(Array.isArray(s.default) && s.default.length === 0)) return s.default;
  if (field && field in FIELD_EXAMPLES) return FIELD_EXAMPLES[field];
  if (s.enum?.length) return s.enum.find((v: unknown) => v !== null);
  if (s.const !== undefined) return s.const;
  const alternatives = s.oneOf ?? s.anyOf;
  if (alternatives?.length && !s.type) return exampleOf(alternatives[0], components, field, depth + 1);
  const type = Array.isArray(s.type) ? s.type.find((t: string) => t !== 'null') : s.type;
  switch (type) {
    case 'object': {
      const out: Json = {};
      const required = new Set<string>(s.required ?? []);
      for (const [key, prop] of Object.entries<Json>(s.properties ?? {})) {
        if (!required.has(key) && !(key in FIELD_EXAMPLES)) continue;
        const value = exampleOf(prop, components, key, depth + 1);
        if (value !== undefined) out[key] = value;
      }
      return out;
    }
    case 'array': {
      const item = exampleOf(s.items, components, field, depth + 1);
      return item === undefined || (typeof item === 'object' && item && !Array.isArray(item) && !Object.keys(item).length) ? [] : [item];
    }
    case 'string':
      if (s.format === 'uuid') return ID;
      if (s.format === 'email') return FIELD_EXAMPLES.email;
      if (s.format === 'uri') return FIELD_EXAMPLES.url;
      if (s.oneOf?.some((f: Json) => f.format === 'ipv4')) return FIELD_EXAMPLES.ip_address;
      if (s.pattern?.includes('\\d{4}-')) return '2026-11-01T12:00:00Z';
      return field ? `${field}-example` : 'text';
    case 'integer': case 'number': return s.minimum ?? 1;
    case 'boolean': return false;
    default: return undefined;
  }
}

/** What a parameter means, for the ones every list shares (a route's own `.description()` wins). */
export const PARAMETER_DESCRIPTIONS: Record<string, string> = {
  id: 'The id of the entity',
  limit: 'Page size: at most 1000 (default 50)',
  offset: 'How many items to skip (default 0)',
  at: 'An ISO 8601 instant with an offset, not in the future: the state as of then (from history)',
  group_by: 'Group the items by this field first',
  order_by: 'Order the items by this field',
  order_direction: 'asc (default) or desc',
  network_id: 'Only items of this network',
  host_id: 'Only items of this host',
  subnet_id: 'Only items of this subnet',
  service_id: 'Only items of this service',
  port_id: 'Only items of this port',
  ip_address_id: 'Only items of this IP address',
  tag_ids: 'Only items carrying any of these tags (comma list)',
  hidden: 'Only hidden (true) or visible (false) hosts',
  q: 'Search: name, hostname or IP address (case-insensitive)',
  ids: 'Only these ids (comma list)',
  session_id: 'The discovery session',
  delivery_id: 'The delivery (its webhook-id)',
};
