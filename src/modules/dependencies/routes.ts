import { resourceRoutes } from '../../http/resourceRoutes.js';
import { dependencyCreate, dependencyListQuery, dependencyResponse, dependencyUpdate } from './schemas.js';
import { dependencyService } from './service.js';
import { dependencyTable } from './table.js';

export const dependencyRoutes = resourceRoutes({
  path: '/api/v1/dependencies', group: 'Dependencies', entity: ['Dependency', 'Dependencies'], noun: 'a dependency', service: dependencyService, writeRole: 'Member', bulkCreate: true,
  lock: (db, scope, id) => dependencyTable.get(db, scope, id, undefined, true),
  schemas: { list: dependencyListQuery, create: dependencyCreate, update: dependencyUpdate, response: dependencyResponse },
  extend: {
    list: { summary: 'List dependencies (filters network_id, dependency_type; `at` for a past instant)' },
    create: { summary: 'Create a dependency (members on its network, in order; source is Manual)' },
    update: { summary: 'Replace a dependency (spec §4.3; network_id must be its own; source never changes)' },
  },
});
