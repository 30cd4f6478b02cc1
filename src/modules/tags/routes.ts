import { resourceRoutes } from '../../http/resourceRoutes.js';
import { tagListQuery, tagResponse, tagWrite } from './schemas.js';
import { tagService } from './service.js';

export const tagRoutes = resourceRoutes({
  path: '/api/v1/tags', group: 'Tags', entity: ['Tag', 'Tags'], noun: 'a tag', service: tagService, writeRole: 'Admin', organizationWide: true,
  schemas: { list: tagListQuery, create: tagWrite, update: tagWrite, response: tagResponse },
  extend: {
    list: { summary: 'List the organization’s tags' },
    remove: { summary: 'Delete a tag (and unassign it everywhere)' },
  },
});
