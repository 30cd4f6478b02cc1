import Joi from 'joi';
import { timestamp, uuid } from '../../http/schemas.js';

/** Every event type; a `types` filter names them or a prefix with `*` (`host.*`). */
export const ENTITY_TYPES = ['host', 'interface', 'ip_address', 'port', 'service', 'binding', 'subnet', 'dependency', 'tag', 'network', 'daemon'] as const;
export const EVENT_TYPES = [
  ...ENTITY_TYPES.flatMap((e) => [`${e}.created`, `${e}.updated`, `${e}.deleted`]),
  'daemon.unreachable', 'daemon.reachable', 'daemon.version_status_changed', 'webhook.disabled',
] as const;

/** An event type (`host.created`), every type of an entity (`host.*`), or everything (`*`). */
export const TYPE_PATTERN = /^(\*|[a-z_]+\.(\*|[a-z_]+))$/;

/** `types=host.*,service.created`: a comma list of types or `<entity>.*` patterns. */
export const eventTypesParam = () =>
  Joi.string().max(2000).custom((value: string) => {
    const list = value.split(',').map((t) => t.trim()).filter(Boolean);
    const bad = list.find((t) => !TYPE_PATTERN.test(t));
    if (bad) throw new Error(`has '${bad}', not an event type (host.created) or a pattern (host.*)`);
    return list;
  });

/** A cursor: the `id` of the last event seen (0 = from the oldest kept). */
export const cursor = () => Joi.string().pattern(/^\d{1,18}$/, 'event id');

const filters = {
  network_id: uuid(),
  types: eventTypesParam(),
  entity_id: uuid(),
};

export const eventListQuery = Joi.object({
  ...filters,
  after: cursor().default('0'),
  limit: Joi.number().integer().min(1).max(1000).default(100),
});

export const eventStreamQuery = Joi.object({ ...filters, after: cursor() });

export const eventResponse = Joi.object({
  id: Joi.string().description('Cursor: events are ordered by commit; pass the last id seen as `after`'),
  type: Joi.string().valid(...EVENT_TYPES),
  occurred_at: timestamp(),
  organization_id: uuid(),
  network_id: uuid().allow(null),
  entity_type: Joi.string(),
  entity_id: uuid(),
  actor: Joi.object({ type: Joi.string().valid('user', 'api_key', 'daemon', 'system'), id: uuid().allow(null) }),
  batch_id: uuid().description('Shared by the changes of one transaction (one PUT with its children, one discovery batch)'),
  changes: Joi.object().unknown(true).description('{field: [before, after]} for an update'),
  data: Joi.object().unknown(true).description('The entity after the change (before it, for a deletion)'),
}).label('Event');
