import { resourceRoutes } from '../../http/resourceRoutes.js';
import { ipAddressCreate, ipAddressListQuery, ipAddressResponse, ipAddressUpdate } from './schemas.js';
import { ipAddressService } from './service.js';

export const ipAddressRoutes = resourceRoutes({
  path: '/api/v1/ip-addresses', group: 'IP addresses', entity: ['IpAddress', 'IpAddresses'], noun: 'an IP address', service: ipAddressService, writeRole: 'Member',
  schemas: { list: ipAddressListQuery, create: ipAddressCreate, update: ipAddressUpdate, response: ipAddressResponse },
  extend: {
    list: { summary: 'List IP addresses (filters network_id, host_id, subnet_id; `at` for a past instant)' },
    create: { summary: 'Add an IP address to a host (inside its subnet, on the host’s network)' },
    remove: { summary: 'Delete an IP address (its bindings go with it and leave every dependency)' },
  },
});
