import Joi from 'joi';
import { body, entityId, idList, SCANOPY_IGNORED, SERVER_OWNED, name, pagination, timestamp, uuid } from '../../http/schemas.js';

const fields = {
  id: entityId(),
  name: name().required(),
  network_id: uuid().required(),
  expires_at: timestamp().allow(null),
  is_enabled: Joi.boolean(),
};
const ignored = [...SERVER_OWNED, ...SCANOPY_IGNORED.apiKey];
export const daemonKeyCreateBody = body(fields, ignored);
/** A key stays on its network: an echoed `network_id` is ignored. */
export const daemonKeyUpdateBody = body({ ...fields, name: name(), network_id: Joi.any().strip() }, ignored);
export const daemonKeyListQuery = Joi.object({ ...pagination, network_id: uuid(), ids: idList() });

export const daemonKeyResponse = Joi.object({
  id: uuid(), organization_id: uuid(), network_id: uuid(), user_id: uuid().allow(null), name: Joi.string(),
  is_enabled: Joi.boolean(), expires_at: timestamp().allow(null), last_used_at: timestamp().allow(null),
  created_at: timestamp(), updated_at: timestamp(),
}).label('DaemonApiKey');
export const daemonKeyCreated = Joi.object({
  api_key: daemonKeyResponse, key: Joi.string().pattern(/^scp_d_[0-9A-Za-z]{32}$/),
}).label('DaemonApiKeyCreated');
