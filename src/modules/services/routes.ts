import { resourceRoutes } from '../../http/resourceRoutes.js';
import { serviceCreate, serviceListQuery, serviceResponse, serviceUpdate } from './schemas.js';
import { serviceService } from './service.js';

export const serviceRoutes = resourceRoutes({
  path: '/api/v1/services', group: 'Services', entity: ['Service', 'Services'], noun: 'a service', service: serviceService, writeRole: 'Member',
  schemas: { list: serviceListQuery, create: serviceCreate, update: serviceUpdate, response: serviceResponse },
  extend: {
    list: { summary: 'List services with their bindings (filters network_id, host_id, service_definition; `at` for a past instant)' },
    create: { summary: 'Add a service (and its bindings) to a host; source is Manual' },
    update: { summary: 'Replace a service; `bindings`, when a list, is synced (source never changes)' },
    remove: { summary: 'Delete a service and its bindings (they leave every dependency)' },
  },
});
