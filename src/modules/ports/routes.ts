import { resourceRoutes } from '../../http/resourceRoutes.js';
import { portCreate, portListQuery, portResponse, portUpdate } from './schemas.js';
import { portService } from './service.js';

export const portRoutes = resourceRoutes({
  path: '/api/v1/ports', group: 'Ports', entity: ['Port', 'Ports'], noun: 'a port', service: portService, writeRole: 'Member',
  schemas: { list: portListQuery, create: portCreate, update: portUpdate, response: portResponse },
  extend: {
    list: { summary: 'List ports (filters network_id, host_id, number, protocol; `at` for a past instant)' },
    create: { summary: 'Add a port to a host ((number, protocol) unique per host; `type` derived)' },
    remove: { summary: 'Delete a port (its bindings go with it and leave every dependency)' },
  },
});
