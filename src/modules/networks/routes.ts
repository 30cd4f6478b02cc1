import { resourceRoutes } from '../../http/resourceRoutes.js';
import { networkListQuery, networkResponse, networkWrite } from './schemas.js';
import { networkService } from './service.js';

export const networkRoutes = resourceRoutes({
  path: '/api/v1/networks', group: 'Networks', noun: 'a network', service: networkService, writeRole: 'Admin',
  schemas: { list: networkListQuery, create: networkWrite, update: networkWrite, response: networkResponse },
  extend: {
    list: { summary: 'List the networks the caller may see' },
  },
});
