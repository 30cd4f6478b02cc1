import Joi from 'joi';
import { listQuery, readOnlyNetworkId, sourceResponse, virtualizationResponse, orderQuery, timestamp, uuid } from '../../http/schemas.js';
import { bindingResponse } from '../bindings/schemas.js';
import { bindingInput, serviceInput } from '../hosts/schemas.js';
import { childResponseFields, offlineAt } from '../hosts/children.js';

export const SERVICE_ORDER_FIELDS = ['name', 'service_definition', 'position', 'created_at', 'updated_at'] as const;

/** The host-request service (hosts/schemas.ts, with its bindings) plus its host; `source` is set by the server. */
export const serviceCreate = serviceInput.keys({ host_id: uuid().required() });
/**
 * Full replace of the service's fields; `bindings`, when a list, is the complete new set (matched
 * by id), when null or absent the bindings are kept. `host_id` and `network_id` may be echoed back, not changed.
 */
export const serviceUpdate = serviceInput.keys({
  host_id: uuid(), network_id: readOnlyNetworkId('a service'), expected_updated_at: timestamp().allow(null), bindings: Joi.array().items(bindingInput).max(1000).allow(null),
});

export const serviceListQuery = listQuery({
  ...orderQuery(SERVICE_ORDER_FIELDS), network_id: uuid(), host_id: uuid(), service_definition: Joi.string().max(100),
});

export const serviceResponse = Joi.object({
  ...childResponseFields(), host_id: uuid(), name: Joi.string(), service_definition: Joi.string(), position: Joi.number().integer(),
  source: sourceResponse(), tags: Joi.array().items(uuid()), virtualization: virtualizationResponse(), offline_at: offlineAt('service'), bindings: Joi.array().items(bindingResponse).optional().description('Present except in history states (a binding has a history of its own)'),
}).label('Service');
