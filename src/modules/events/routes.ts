import { AppError } from '../../core/errors.js';
import { SESSION_COOKIE } from '../../core/principal.js';
import { sha256Hex } from '../../core/secrets.js';
import { CursorPage, StreamResponse } from '../../http/envelope.js';
import { credentialCheck } from '../../http/authenticate.js';
import { defineRoutes } from '../../http/pipeline.js';
import { eventListQuery, eventResponse, eventStreamQuery } from './schemas.js';
import { assertCursorKept, checkFilter, lastEventId, listEvents, type EventFilter } from './service.js';
import { acquireStreamLease, STREAMS_PER_CREDENTIAL } from './streamLimit.js';
import { revocationSubject } from './revocations.js';

const filterOf = (q: Record<string, any>): EventFilter => ({ networkId: q.network_id, types: q.types, entityId: q.entity_id });

export const eventRoutes = defineRoutes([
  {
    operationId: 'listEvents', method: 'get', path: '/api/v1/events', group: 'Events', auth: 'Viewer',
    summary: 'Changes after a cursor, in commit order (types: comma list, `host.*` patterns; network_id; entity_id); meta.cursor.next is the next `after`',
    query: eventListQuery, response: eventResponse, cursorPaged: true, errors: [410],
    handler: async ({ db, scope, query }) => {
      const { events, hasMore } = await listEvents(db, scope, filterOf(query), query.after, query.limit);
      return new CursorPage(events, { after: query.after, next: events.at(-1)?.id ?? query.after, has_more: hasMore });
    },
  },
  {
    operationId: 'streamEvents', method: 'get', path: '/api/v1/events/stream', group: 'Events', auth: 'Viewer',
    summary: `The same changes as Server-Sent Events, live: resumes after Last-Event-ID (or \`after\`) with no gap, else from now; a comment heartbeat every 15 s; at most ${STREAMS_PER_CREDENTIAL} open per credential (429)`,
    query: eventStreamQuery, produces: ['text/event-stream'], errors: [410, 429],
    handler: async ({ db, scope, query, services, ctx }) => {
      const filter = filterOf(query);
      await checkFilter(db, scope, filter);
      const header = ctx.get('Last-Event-ID').trim();
      if (header && !/^\d{1,18}$/.test(header)) throw new AppError('validation_failed', { field: 'Last-Event-ID', reason: 'must be an event id' });
      const after = header || query.after || (await lastEventId(db, scope.organizationId));
      await assertCursorKept(db, after);
      // Counted per credential, and ended when it is revoked: the key, or the session (the cookie's digest, as sessions are stored).
      const credential = scope.kind === 'api_key' ? revocationSubject.apiKey(scope.apiKeyId!) : revocationSubject.session(sha256Hex(ctx.cookies.get(SESSION_COOKIE) ?? ''));
      const leaseMs = Math.max(30_000, 3 * services.config.eventHeartbeatMs);
      const lease = await acquireStreamLease(services.redis, services.config.redisPrefix, credential, leaseMs);
      const stream = await services.events.open(scope, filter, after, credentialCheck(ctx, services), lease, credential);
      return new StreamResponse('text/event-stream', stream.body, () => services.events.close(stream));
    },
  },
]);
