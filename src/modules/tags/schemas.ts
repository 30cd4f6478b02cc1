import Joi from 'joi';
import { body, color, description, entityId, listQuery, name, orderQuery, tagIds, timestamp, uuid } from '../../http/schemas.js';

export const TAG_ORDER_FIELDS = ['name', 'color', 'created_at', 'updated_at', 'is_application'] as const;

export const tagListQuery = listQuery(orderQuery(TAG_ORDER_FIELDS));

export const tagWrite = body({
  id: entityId(),
  name: name().required(),
  description: description(),
  color: color().required(),
  is_application: Joi.boolean().default(false),
  expected_updated_at: timestamp().allow(null),
});

export const tagResponse = Joi.object({
  id: uuid(), organization_id: uuid(), name: Joi.string(), description: Joi.string().allow(null), color: color(),
  is_application: Joi.boolean(), lineage_id: uuid().allow(null), created_at: timestamp(), updated_at: timestamp(),
  valid_from: timestamp(), valid_to: timestamp().allow(null),
}).label('Tag');

const entityType = () => Joi.string().valid('Host', 'Service', 'Subnet', 'Network', 'Dependency', 'Group', 'Daemon').required()
  .description('Group is Scanopy’s name for a dependency');
export const tagAssignBody = body({
  entity_type: entityType(),
  entity_id: uuid().required(),
  tag_ids: tagIds().required().description('The entity’s tags, replacing the ones it has; [] removes them all'),
}, []);
export const tagAssignResponse = Joi.object({ entity_type: Joi.string(), entity_id: uuid(), tag_ids: Joi.array().items(uuid()) }).label('TagAssignment');
export const tagBulkBody = body({
  entity_type: entityType(),
  entity_ids: Joi.array().items(uuid()).min(1).max(1000).unique().required(),
  tag_id: uuid().required(),
}, []);
export const tagBulkResponse = Joi.object({ affected_count: Joi.number().integer().description('Entities whose tags changed') }).label('TagBulkResult');
