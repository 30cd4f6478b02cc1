import { defineRoutes } from '../../http/pipeline.js';
import { changesListQuery, changesParams, scanChangesResponse } from './schemas.js';
import { changesService as s } from './service.js';

const group = 'Changes';

export const changesRoutes = defineRoutes([
  {
    group, auth: 'Viewer', operationId: 'listScanChanges', method: 'get', path: '/api/v1/changes', paginated: true, query: changesListQuery, response: scanChangesResponse,
    summary: 'What each ended Network scan of a network changed, newest first: new, gone, changed, offline and back-online hosts (the session summaries), and who acknowledged it',
    handler: ({ db, scope, query }) => s.list(db, scope, query as { network_id?: string; unacknowledged?: boolean; limit: number; offset: number }),
  },
  {
    group, auth: 'Member', operationId: 'acknowledgeScanChanges', method: 'post', path: '/api/v1/changes/:session_id/acknowledge', params: changesParams, response: scanChangesResponse,
    summary: 'Acknowledge what a scan changed (acknowledging it again keeps the first acknowledgement)',
    handler: ({ db, scope, params }) => s.acknowledge(db, scope, params.session_id),
  },
]);
