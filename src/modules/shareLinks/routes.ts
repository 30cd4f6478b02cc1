import { Db } from '../../core/db.js';
import { AppError } from '../../core/errors.js';
import { StreamResponse } from '../../http/envelope.js';
import { defineRoutes } from '../../http/pipeline.js';
import { idParams } from '../../http/schemas.js';
import { lastEventId } from '../events/service.js';
import { revocationSubject, revokeStreamsAfterCommit } from '../events/revocations.js';
import { acquireStreamLease } from '../events/streamLimit.js';
import { topologyService, type TopologyQuery } from '../topology/service.js';
import { topologyQuery } from '../topology/schemas.js';
import {
  shareLinkCreate, shareLinkCreated, shareLinkListQuery, shareLinkParams, shareLinkResponse, sharedTopologyQuery, sharedTopologyResponse, shareTokenParams,
} from './schemas.js';
import { shareLinkService as s, shareScope, type ShareLinkInput } from './service.js';
import { ShareFrames } from './stream.js';

const group = 'Share links';
const path = '/api/v1/networks/:id/share-links';

// Managing links: Admins and Owners create (signed in: a key cannot mint a credential that outlives
// it, as with API keys) and revoke; whoever may read the network lists them (never a token).
export const shareLinkRoutes = defineRoutes([
  {
    group, auth: 'Viewer', operationId: 'listShareLinks', method: 'get', path, params: idParams, query: shareLinkListQuery, list: true, response: shareLinkResponse,
    summary: 'A network’s share links, newest first (the usable ones; include_inactive: the revoked and expired too); tokens are never shown again',
    handler: ({ db, scope, params, query }) => s.list(db, scope, params.id, query.include_inactive),
  },
  {
    group, auth: 'Admin', sessionOnly: true, operationId: 'createShareLink', method: 'post', path, params: idParams, status: 201, body: shareLinkCreate, response: shareLinkCreated,
    summary: 'A read-only link to the network’s map (a view, live or as of `at`) that works without signing in until expires_at (90 days at most); the token is shown only in this answer, the page is /share/<token>',
    handler: ({ db, scope, params, body }) => s.create(db, scope, params.id, body as ShareLinkInput),
  },
  {
    group, auth: 'Admin', operationId: 'revokeShareLink', method: 'delete', path: `${path}/:share_link_id`, params: shareLinkParams, response: shareLinkResponse,
    summary: 'Revoke a share link: it answers 404 from now on, and its open streams end',
    handler: async (req) => {
      const revoked = await s.revoke(req.db, req.scope, req.params.id, req.params.share_link_id);
      revokeStreamsAfterCommit(req, 'end', [revocationSubject.shareLink(revoked.id)]);
      return revoked;
    },
  },
]);

// Reading through a link: the token in the path is the whole credential, whatever else comes along
// (a session cookie or Bearer key is neither needed nor used). Anonymous callers are limited per
// client address, as on every public route.
export const sharedMapRoutes = defineRoutes([
  {
    group, auth: 'public', operationId: 'getSharedTopology', method: 'get', path: '/api/share/:token/topology', params: shareTokenParams, query: sharedTopologyQuery,
    response: sharedTopologyResponse, reads: 'primary',
    summary: 'The map a share link shows: the same graph as GET /api/v1/topology for its network, view and instant (expand: containers to open); 404 for an unknown, expired or revoked link alike',
    handler: async ({ db, params, query, services }) => {
      const link = await s.resolve(db, params.token);
      // Found by its token (no organization yet); then held to the link's organization like a request of it.
      const held = db.withContext({ organizationId: link.organizationId });
      const q = topologyQuery.validate({ network_id: link.networkId, view: link.view, at: link.at ?? undefined, expand: query.expand }).value as TopologyQuery;
      const map = await topologyService.get(held, shareScope(link), q, services.queues.topologyLayout, services.topologyGraphs, services.heavyReadBudget);
      await s.touch(held, link);
      return { ...map, share: { network_name: link.networkName, label: link.label, view: link.view, at: link.at, expires_at: link.expiresAt } };
    },
  },
  {
    group, auth: 'public', operationId: 'streamSharedTopology', method: 'get', path: '/api/share/:token/stream', params: shareTokenParams, produces: ['text/event-stream'], errors: [429],
    summary: 'Server-Sent Events: a `changed` event each time the live map of a share link may have changed (read it again); no ids, no data. A link fixed at an instant has no stream (404)',
    handler: async ({ db, params, services, ctx }) => {
      const link = await s.resolve(db, params.token);
      if (link.at) throw new AppError('entity_not_found', { entity: 'ShareLink', id: 'shared' });
      const scope = shareScope(link);
      const after = await lastEventId(db, link.organizationId);
      // Counted per link and client address: one viewer cannot take every stream of an embedded map.
      const leaseMs = Math.max(30_000, 3 * services.config.eventHeartbeatMs);
      const lease = await acquireStreamLease(services.redis, services.config.redisPrefix, `share:${link.id}:${ctx.ip}`, leaseMs);
      const recheck = async () => ((await s.usable(new Db(services.orm.em.fork()), link)) ? scope : undefined);
      const stream = await services.events.open(scope, { networkId: link.networkId }, after, recheck, lease, revocationSubject.shareLink(link.id));
      return new StreamResponse('text/event-stream', stream.body.pipe(new ShareFrames()), () => services.events.close(stream));
    },
  },
]);
