import Joi from 'joi';
import { listQuery, orderQuery, readOnlyNetworkId, timestamp, uuid } from '../../http/schemas.js';
import { bindingInput } from '../hosts/schemas.js';
import { childResponseFields } from '../hosts/children.js';

export const BINDING_ORDER_FIELDS = ['type', 'created_at', 'updated_at'] as const;

/** The host-request binding (hosts/schemas.ts: `{type:"Port", port_id, ip_address_id?}` or `{type:"IPAddress", ip_address_id}`) plus its service. */
export const bindingCreate = bindingInput.keys({ service_id: uuid().required() });
/** Full replace; `service_id` and `network_id` may be echoed back but a binding does not move to another service or network. */
export const bindingUpdate = bindingInput.keys({ service_id: uuid(), network_id: readOnlyNetworkId('a binding'), expected_updated_at: timestamp().allow(null) });

export const bindingListQuery = listQuery({
  ...orderQuery(BINDING_ORDER_FIELDS), network_id: uuid(), host_id: uuid(), service_id: uuid(), port_id: uuid(), ip_address_id: uuid(),
});

export const bindingResponse = Joi.object({
  ...childResponseFields(), service_id: uuid(), type: Joi.string().valid('Port', 'IPAddress'), port_id: uuid().allow(null),
  ip_address_id: uuid().allow(null),
}).label('Binding');
