import Joi from 'joi';
import { checkPattern, PATTERN_MAX_LENGTH } from '../../core/safePattern.js';
import { body, entityId, idList, name, pagination, timestamp, uuid } from '../../http/schemas.js';

/** The icons the web app has (web/src/icons.ts: host kinds and service logos). */
export const SERVICE_ICONS = [
  'server', 'database', 'router', 'switch', 'firewall', 'access_point', 'printer', 'camera', 'nas', 'phone', 'container_host', 'hypervisor',
  'virtual_machine', 'workstation',
  'nginx', 'postgresql', 'redis', 'docker', 'grafana', 'prometheus', 'proxmox', 'traefik', 'gitea', 'opnsense', 'pfsense', 'home assistant',
  'wireguard', 'haproxy', 'nodejs', 'uptime kuma', 'ubiquiti', 'mariadb', 'mongodb', 'rabbitmq', 'elasticsearch', 'pi-hole', 'truenas',
  'mikrotik', 'dovecot',
] as const;

/** At most this many ports per definition; at most MAX_DEFINITIONS enabled definitions go to an agent. */
export const MAX_PORTS = 64;
export const MAX_DEFINITIONS = 200;
export const MATCH_FIELD = /^(banner|status|title|body|header:[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64})$/;

const pattern = () => Joi.string().max(PATTERN_MAX_LENGTH).custom((value: string, helpers) => {
  const verdict = checkPattern(value);
  return verdict.ok ? value : helpers.error('pattern.unsafe', { reason: verdict.reason });
}).messages({ 'pattern.unsafe': '{{#label}} is refused: {{#reason}}' })
  .description('A regular expression (JS syntax, RE2-like subset): no backreferences, no lookaround, no repeated group holding a quantifier or an alternation, {n} up to 100; `(?i)` first: case-insensitive. See docs/service-definitions.md');

const probe = Joi.object({
  type: Joi.string().valid('banner', 'http').required().description('banner: connect and read what the service says first; http: a GET of `path` (no credentials)'),
  path: Joi.when('type', {
    is: 'http',
    then: Joi.string().max(500).pattern(/^\/[\x21-\x7e]*$/, 'an absolute path (/…) of printable characters, no spaces').required(),
    otherwise: Joi.forbidden(),
  }),
}).required();

const match = Joi.object({
  field: Joi.string().pattern(MATCH_FIELD, 'banner, status, title, body or header:<name>').required()
    .description('banner (a banner probe\'s bytes), or of an http probe: status (the status line), header:<name>, title, body'),
  pattern: pattern().required(),
}).required();

export const serviceDefinitionWrite = body({
  id: entityId(),
  name: name().required().description('The service name shown'),
  category: Joi.string().trim().min(1).max(40).pattern(/^[\w .&/-]+$/, 'a short word').required().description('A short word: Web, Database, Monitoring…'),
  icon: Joi.string().valid(...SERVICE_ICONS).allow(null).default(null).description('One of the icons the web app has'),
  ports: Joi.array().items(Joi.number().integer().min(1).max(65535)).min(1).max(MAX_PORTS).unique().required().description(`TCP ports (1..${MAX_PORTS}); added to the ports the agent probes`),
  probe,
  match,
  enabled: Joi.boolean().default(true),
}).custom((value: { probe: { type: string }; match: { field: string } }, helpers) => {
  const http = value.probe.type === 'http';
  if (http === (value.match.field === 'banner')) {
    return helpers.error('any.invalid', { label: 'match.field' });
  }
  return value;
}).messages({ 'any.invalid': '{{#label}}: banner goes with a banner probe; status, header:<name>, title and body with an http probe' }).example({
  name: 'Acme console', category: 'Web', icon: 'server', ports: [8080, 8443], probe: { type: 'http', path: '/api/about' },
  match: { field: 'body', pattern: '"product":\\s*"acme-console"' }, enabled: true,
});

export const serviceDefinitionResponse = Joi.object({
  id: uuid(), organization_id: uuid(), name: Joi.string(), category: Joi.string(), icon: Joi.string().allow(null),
  ports: Joi.array().items(Joi.number().integer()),
  probe: Joi.object({ type: Joi.string().valid('banner', 'http'), path: Joi.string().optional() }),
  match: Joi.object({ field: Joi.string(), pattern: Joi.string() }),
  enabled: Joi.boolean(), created_at: timestamp(), updated_at: timestamp(),
}).label('ServiceDefinition');

export const serviceDefinitionListQuery = Joi.object({ ...pagination, ids: idList(), enabled: Joi.boolean() });
