import Joi from 'joi';
import { defineRoutes } from '../../http/pipeline.js';
import { at, idParams } from '../../http/schemas.js';
import { tagListQuery, tagResponse, tagWrite } from './schemas.js';
import { tagService } from './service.js';

export const tagRoutes = defineRoutes([
  {
    method: 'get', path: '/api/v1/tags', group: 'Tags', summary: 'List the organization’s tags', auth: 'Viewer',
    query: tagListQuery, response: tagResponse, paginated: true,
    handler: ({ db, scope, query }) => tagService.list(db, scope, query),
  },
  {
    method: 'post', path: '/api/v1/tags', group: 'Tags', summary: 'Create a tag', auth: 'Admin', status: 201,
    body: tagWrite, response: tagResponse,
    handler: ({ db, scope, body }) => tagService.create(db, scope, body),
  },
  {
    method: 'get', path: '/api/v1/tags/:id', group: 'Tags', summary: 'Get a tag (as of `at`)', auth: 'Viewer',
    params: idParams, query: Joi.object({ at: at() }), response: tagResponse,
    handler: ({ db, scope, params, query }) => tagService.get(db, scope, params.id, query.at),
  },
  {
    method: 'put', path: '/api/v1/tags/:id', group: 'Tags', summary: 'Replace a tag', auth: 'Admin',
    params: idParams, body: tagWrite, response: tagResponse,
    handler: ({ db, scope, params, body }) => tagService.update(db, scope, params.id, body),
  },
  {
    method: 'delete', path: '/api/v1/tags/:id', group: 'Tags', summary: 'Delete a tag (and unassign it everywhere)', auth: 'Admin',
    params: idParams,
    handler: ({ db, scope, params }) => tagService.remove(db, scope, params.id),
  },
  {
    method: 'get', path: '/api/v1/tags/:id/history', group: 'Tags', summary: 'Every state of a tag, newest first', auth: 'Viewer',
    params: idParams, response: tagResponse,
    handler: ({ db, scope, params }) => tagService.history(db, scope, params.id),
  },
]);
