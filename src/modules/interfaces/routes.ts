import { resourceRoutes } from '../../http/resourceRoutes.js';
import { interfaceCreate, interfaceListQuery, interfaceResponse, interfaceUpdate } from './schemas.js';
import { interfaceService } from './service.js';

export const interfaceRoutes = resourceRoutes({
  path: '/api/v1/interfaces', group: 'Interfaces', entity: ['Interface', 'Interfaces'], noun: 'an interface', service: interfaceService, writeRole: 'Member',
  schemas: { list: interfaceListQuery, create: interfaceCreate, update: interfaceUpdate, response: interfaceResponse },
  extend: {
    list: { summary: 'List interfaces (filters network_id, host_id, ip_address_id, admin_status, oper_status; `at` for a past instant)' },
    create: { summary: 'Add an interface (ifTable entry) to a host; `neighbor` is read-only' },
    update: { summary: 'Replace an interface (`neighbor` is kept)' },
  },
});
