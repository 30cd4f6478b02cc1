import { defineRoutes } from '../../http/pipeline.js';
import { bulkRoutes } from '../../http/resourceRoutes.js';
import { idParams } from '../../http/schemas.js';
import { serviceDefinitionListQuery, serviceDefinitionResponse, serviceDefinitionWrite } from './schemas.js';
import { serviceDefinitionService as s } from './service.js';

const group = 'Service definitions';
const path = '/api/v1/service_definitions';

const declared = defineRoutes([
  {
    group, auth: 'Viewer', operationId: 'listServiceDefinitions', method: 'get', path, paginated: true, query: serviceDefinitionListQuery, response: serviceDefinitionResponse,
    summary: 'List the organization’s custom service definitions (what our agent recognises beside its built-in rules)',
    handler: ({ db, scope, query }) => s.list(db, scope, query as { limit: number; offset: number }),
  },
  {
    group, auth: 'Admin', organizationWide: true, operationId: 'createServiceDefinition', method: 'post', path, status: 201, body: serviceDefinitionWrite, response: serviceDefinitionResponse,
    summary: 'Create a custom service definition: ports, a probe (banner or an HTTP GET of a path) and a pattern its answer must match (a pattern that could backtrack without bound is refused: 400 on match.pattern)',
    handler: ({ db, scope, body }) => s.create(db, scope, body),
  },
  {
    group, auth: 'Viewer', operationId: 'getServiceDefinition', method: 'get', path: `${path}/:id`, params: idParams, response: serviceDefinitionResponse,
    summary: 'Get a custom service definition',
    handler: ({ db, scope, params }) => s.get(db, scope, params.id),
  },
  {
    group, auth: 'Admin', organizationWide: true, operationId: 'updateServiceDefinition', method: 'put', path: `${path}/:id`, params: idParams, body: serviceDefinitionWrite, response: serviceDefinitionResponse,
    summary: 'Replace a custom service definition',
    handler: ({ db, scope, params, body }) => s.update(db, scope, params.id, body),
  },
  {
    group, auth: 'Admin', organizationWide: true, operationId: 'deleteServiceDefinition', method: 'delete', path: `${path}/:id`, params: idParams,
    summary: 'Delete a custom service definition',
    handler: ({ db, scope, params }) => s.remove(db, scope, params.id),
  },
]);

export const serviceDefinitionRoutes = [...declared, ...bulkRoutes(declared, {
  path, group, entity: ['ServiceDefinition', 'ServiceDefinitions'],
  schemas: { list: serviceDefinitionListQuery, response: serviceDefinitionResponse },
  list: (db, scope, q) => s.list(db, scope, q as { limit: number; offset: number }),
  remove: (db, scope, id) => s.remove(db, scope, id),
})];
