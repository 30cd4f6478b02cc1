import Joi from 'joi';
import { body, color, description, entityId, listQuery, name, orderQuery, timestamp, uuid } from '../../http/schemas.js';

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
