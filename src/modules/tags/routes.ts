import { defineRoutes } from '../../http/pipeline.js';
import { resourceRoutes } from '../../http/resourceRoutes.js';
import { tagAssignment } from './assign.js';
import { tagAssignBody, tagAssignResponse, tagBulkBody, tagBulkResponse, tagListQuery, tagResponse, tagWrite } from './schemas.js';
import { tagService, tagTable } from './service.js';

// The assignment routes come first: `/api/v1/tags/assign` would otherwise be taken for `/api/v1/tags/:id`.
const assignmentRoutes = defineRoutes([
  {
    operationId: 'assignTags', method: 'put', path: '/api/v1/tags/assign', group: 'Tags', auth: 'Member',
    summary: 'Replace the tags of one entity (Host, Service, Subnet, Network, Dependency or Daemon)', body: tagAssignBody, response: tagAssignResponse,
    handler: ({ db, scope, body }) => tagAssignment.replace(db, scope, body),
  },
  {
    operationId: 'bulkAddTag', method: 'post', path: '/api/v1/tags/assign/bulk-add', group: 'Tags', auth: 'Member',
    summary: 'Add one tag to many entities of one type (all or none); affected_count counts those that did not have it',
    body: tagBulkBody, response: tagBulkResponse,
    handler: ({ db, scope, body }) => tagAssignment.bulk(db, scope, body, 'add'),
  },
  {
    operationId: 'bulkRemoveTag', method: 'post', path: '/api/v1/tags/assign/bulk-remove', group: 'Tags', auth: 'Member',
    summary: 'Remove one tag from many entities of one type (all or none); affected_count counts those that had it',
    body: tagBulkBody, response: tagBulkResponse,
    handler: ({ db, scope, body }) => tagAssignment.bulk(db, scope, body, 'remove'),
  },
]);

export const tagRoutes = [
  ...assignmentRoutes,
  ...resourceRoutes({
    path: '/api/v1/tags', group: 'Tags', entity: ['Tag', 'Tags'], noun: 'a tag', service: tagService, writeRole: 'Admin', organizationWide: true, bulkCreate: true,
    lock: (db, scope, id) => tagTable.get(db, scope, id, undefined, true),
    schemas: { list: tagListQuery, create: tagWrite, update: tagWrite, response: tagResponse },
    extend: {
      list: { summary: 'List the organization’s tags' },
      remove: { summary: 'Delete a tag (and unassign it everywhere)' },
    },
  }),
];
