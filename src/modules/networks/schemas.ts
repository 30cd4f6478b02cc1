import Joi from 'joi';
import { at, body, SCANOPY_IGNORED, SERVER_OWNED, description, entityId, listQuery, name, orderQuery, tagIds, timestamp, uuid } from '../../http/schemas.js';

export const NETWORK_ORDER_FIELDS = ['name', 'created_at', 'updated_at'] as const;

export const networkListQuery = listQuery(orderQuery(NETWORK_ORDER_FIELDS));

const hostExpiryDays = Joi.number().integer().min(1).max(3650)
  .description('How long a host may be offline before it counts as stale (days; default 30; omitted on a write: unchanged)');

export const networkWrite = body({
  id: entityId(),
  name: name().required(),
  description: description(),
  tags: tagIds().default([]),
  host_expiry_days: hostExpiryDays,
  expected_updated_at: timestamp().allow(null),
}, [...SERVER_OWNED, ...SCANOPY_IGNORED.network]);

export const networkResponse = Joi.object({
  id: uuid(), organization_id: uuid(), name: Joi.string(), description: Joi.string().allow(null),
  tags: Joi.array().items(uuid()), host_expiry_days: hostExpiryDays, lineage_id: uuid().allow(null), created_at: timestamp(), updated_at: timestamp(),
  valid_from: timestamp(), valid_to: timestamp().allow(null),
}).label('Network');

export const networkDeleteQuery = Joi.object({
  cascade: Joi.boolean().default(false).description('Delete everything the network holds with it (hosts, subnets, dependencies, daemons and their keys); without it a non-empty network is 409 network_not_empty'),
});

export const networkRestoreQuery = Joi.object({
  at: at().required().description('The instant whose state of the network and its contents comes back'),
});

export const networkRestoreResponse = networkResponse.keys({
  restored: Joi.object().unknown(true).description('Rows brought back per table (daemons and daemon keys never are)'),
}).label('RestoredNetwork');

export const networkContentsResponse = Joi.object({
  hosts: Joi.number().integer(), services: Joi.number().integer(), subnets: Joi.number().integer(), dependencies: Joi.number().integer(),
  daemons: Joi.number().integer(), daemon_api_keys: Joi.number().integer(),
}).label('NetworkContents');
