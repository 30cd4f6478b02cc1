import Joi from 'joi';
import { body, entityId, idList, SCANOPY_IGNORED, SERVER_OWNED, name, pagination, timestamp, uuid } from '../../http/schemas.js';
import { role } from '../accounts/schemas.js';

const fields = {
  id: entityId(),
  name: name().required(),
  permissions: role(),
  network_ids: Joi.array().items(uuid()).unique().max(1000).allow(null),
  expires_at: timestamp().allow(null),
  is_enabled: Joi.boolean(),
};
const ignored = [...SERVER_OWNED, ...SCANOPY_IGNORED.apiKey];
export const apiKeyCreateBody = body(fields, ignored);
export const apiKeyUpdateBody = body({ ...fields, name: name() }, ignored);
export const apiKeyListQuery = Joi.object({ ...pagination, ids: idList() });

export const apiKeyResponse = Joi.object({
  id: uuid(), name: Joi.string(), user_id: uuid(), organization_id: uuid(), permissions: role(),
  network_ids: Joi.array().items(uuid()).allow(null), expires_at: timestamp().allow(null), is_enabled: Joi.boolean(),
  last_used_at: timestamp().allow(null), created_at: timestamp(), updated_at: timestamp(),
}).label('UserApiKey');
export const apiKeyCreated = Joi.object({ api_key: apiKeyResponse, key: Joi.string().pattern(/^scp_u_[0-9A-Za-z]{32}$/) }).label('UserApiKeyCreated');
