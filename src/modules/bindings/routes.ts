import { resourceRoutes } from '../../http/resourceRoutes.js';
import { bindingCreate, bindingListQuery, bindingResponse, bindingUpdate } from './schemas.js';
import { bindingService } from './service.js';

export const bindingRoutes = resourceRoutes({
  path: '/api/v1/bindings', group: 'Bindings', entity: ['Binding', 'Bindings'], noun: 'a binding', service: bindingService, writeRole: 'Member',
  schemas: { list: bindingListQuery, create: bindingCreate, update: bindingUpdate, response: bindingResponse },
  extend: {
    list: { summary: 'List bindings (filters network_id, host_id, service_id, port_id, ip_address_id; `at` for a past instant)' },
    create: { summary: 'Bind a service to a port or IP address of its host' },
    remove: { summary: 'Delete a binding (it leaves every dependency that lists it)' },
  },
});
