import Joi from 'joi';
import { ipAddress, listQuery, orderQuery, readOnlyNetworkId, timestamp, uuid } from '../../http/schemas.js';
import { ipAddressInput } from '../hosts/schemas.js';
import { childResponseFields, offlineAt } from '../hosts/children.js';

export const IP_ADDRESS_ORDER_FIELDS = ['ip_address', 'name', 'position', 'created_at', 'updated_at'] as const;

/** The host-request IP address (hosts/schemas.ts) plus its host; network and organization come from the host. */
export const ipAddressCreate = ipAddressInput.keys({ host_id: uuid().required() });
/** Full replace; `host_id` and `network_id` may be echoed back but an address does not move to another host or network. */
export const ipAddressUpdate = ipAddressInput.keys({ host_id: uuid(), network_id: readOnlyNetworkId('an IP address'), expected_updated_at: timestamp().allow(null) });

export const ipAddressListQuery = listQuery({
  ...orderQuery(IP_ADDRESS_ORDER_FIELDS), network_id: uuid(), host_id: uuid(), subnet_id: uuid(),
});

export const ipAddressResponse = Joi.object({
  ...childResponseFields(), host_id: uuid(), subnet_id: uuid(), ip_address: ipAddress(), mac_address: Joi.string().allow(null),
  mac_vendor: Joi.string().allow(null).description('The MAC\'s vendor from the OUI database (read-only, from discovery)'),
  mac_random: Joi.boolean().allow(null).description('A locally administered (randomised) MAC: never used alone to identify a host (read-only, from discovery)'),
  name: Joi.string().allow(null), position: Joi.number().integer(), offline_at: offlineAt('address'),
}).label('IPAddress');
