import Joi from 'joi';
import { listQuery, orderQuery, readOnlyNetworkId, timestamp, uuid } from '../../http/schemas.js';
import { portInput } from '../hosts/schemas.js';
import { childResponseFields, offlineAt } from '../hosts/children.js';

export const PORT_ORDER_FIELDS = ['number', 'protocol', 'type', 'created_at', 'updated_at'] as const;

/** The host-request port (hosts/schemas.ts: `type` is ignored, derived) plus its host. */
export const portCreate = portInput.keys({ host_id: uuid().required() });
/** Full replace; `host_id` and `network_id` may be echoed back but a port does not move to another host or network. */
export const portUpdate = portInput.keys({ host_id: uuid(), network_id: readOnlyNetworkId('a port'), expected_updated_at: timestamp().allow(null) });

export const portListQuery = listQuery({
  ...orderQuery(PORT_ORDER_FIELDS), network_id: uuid(), host_id: uuid(),
  number: Joi.number().integer().min(0).max(65535), protocol: Joi.string().valid('Tcp', 'Udp'),
});

export const portResponse = Joi.object({
  ...childResponseFields(), host_id: uuid(), number: Joi.number().integer(), protocol: Joi.string().valid('Tcp', 'Udp'), type: Joi.string(), offline_at: offlineAt('port'),
}).label('Port');
