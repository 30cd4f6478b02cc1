import { defineRoutes } from '../../http/pipeline.js';
import { searchQuery, searchResult } from './schemas.js';
import { searchService } from './service.js';

export const searchRoutes = defineRoutes([
  {
    group: 'Search', auth: 'Viewer', operationId: 'search', method: 'get', path: '/api/v1/search', query: searchQuery, response: searchResult, list: true,
    summary: 'Hosts, addresses, MACs, services, subnets and tags whose name or address holds the text, across the networks the caller may see (exact matches first)',
    handler: ({ db, scope, query }) => searchService.search(db, scope, query as { q: string; network_id?: string; limit: number }),
  },
]);
