import Joi from 'joi';
import { defineRoutes } from '../../http/pipeline.js';
import { anyUuid, daemonHostRequestBody, discoveryUpdateBody } from './schemas.js';
import { applySessionUpdate, daemonContext, ingestHost } from './ingest.js';
import { currentSessionId, noteDaemonContact } from './sessions.js';

/** Discovery reports of daemons (reference daemon-protocol §1.1 step 4). */
export const discoveryRoutes = defineRoutes([
  {
    group: 'Daemon protocol', auth: 'daemon', operationId: 'updateDiscoverySession', method: 'post', path: '/api/v1/discovery/:session_id/update',
    summary: 'A discovery session’s progress (the body’s session_id counts; an unknown session is created)',
    params: Joi.object({ session_id: anyUuid().required() }), body: discoveryUpdateBody,
    handler: async ({ db, scope, body }) => {
      await applySessionUpdate(db, daemonContext(scope), body);
      await noteDaemonContact(db, scope.organizationId, scope.daemonId!);
      return null;
    },
  },
  {
    group: 'Daemon protocol', auth: 'daemon', operationId: 'ingestDiscoveredHost', method: 'post', path: '/api/v1/hosts/discovery',
    summary: 'A discovered host with its interfaces, ports and services, merged into the inventory; answers the stored host',
    body: daemonHostRequestBody,
    handler: async ({ db, scope, body }) => ingestHost(db, daemonContext(scope, await currentSessionId(db, scope.organizationId, scope.daemonId!)), body),
  },
]);
