import Joi from 'joi';
import { Db } from '../../core/db.js';
import { defineRoutes, type RequestInput } from '../../http/pipeline.js';
import { requestSchedulerReconcile } from '../../core/queues.js';
import type { Services } from '../../services.js';
import { bulkRoutes } from '../../http/resourceRoutes.js';
import { at, idParams } from '../../http/schemas.js';
import { anyUuid, heartbeatBody, capabilities, registerBody, requestWorkBody, startupBody } from '../discovery/schemas.js';
import {
  approvedTargetResponse, daemonKeyNetworkResponse, daemonListQuery, discoverySessionResponse, daemonResponse, daemonUpdateBody, provisionBody, provisionResponse, sessionParams, targetBody, targetParams, targetUpdateBody,
  targetsResponse,
} from './schemas.js';
import { daemonProtocol } from './protocol.js';
import { daemonService } from './service.js';
import { daemonTable } from './table.js';
import { daemonTargets } from './targets.js';
import { cancelSession, listDaemonSessions, queueNetworkScan, SESSIONS_SHOWN, type DaemonRef } from '../discovery/sessions.js';

/** Daemons for users: Viewer reads, Admin manages (decisions §2). */
/**
 * A committed change to what is polled (a new, changed or deleted daemon) reaches the poll
 * schedulers now, not at the next periodic reconcile. After the commit (the worker must see the
 * change), and never an error: the change is done, and a client told otherwise would retry it.
 */
const reconcileAfterCommit = (afterCommit: RequestInput['afterCommit'], services: Services) =>
  afterCommit('tell the poll schedulers of a daemon change (the periodic reconcile will)', () => requestSchedulerReconcile(services.queues));

const daemonRoutesDeclared = defineRoutes([
  {
    operationId: 'listDaemons', method: 'get', path: '/api/v1/daemons', group: 'Daemons', auth: 'Viewer', paginated: true,
    summary: 'List daemons with their version_status (filter network_id; `at` for a past instant)', query: daemonListQuery, response: daemonResponse,
    handler: ({ db, scope, query }) => daemonService.list(db, scope, query),
  },
  {
    operationId: 'provisionDaemon', method: 'post', path: '/api/v1/daemons/provision', group: 'Daemons', auth: 'Admin', status: 201, errors: [502],
    summary: 'Provision a server_poll daemon: its API key (plaintext shown only in this response), its host and the daemon; with pairing_code the server also gives the agent its key (422 / 502 when the agent refuses or cannot be reached: nothing is kept)',
    body: provisionBody, response: provisionResponse,
    handler: ({ db, scope, body, services, afterCommit }) => {
      reconcileAfterCommit(afterCommit, services);
      return body.pairing_code
        // A connection of its own: the agent checks the new key with this server before it answers.
        ? daemonService.provisionPaired(new Db(services.orm.em.fork(), db.context), scope, body, services.config)
        : daemonService.provision(db, scope, body, services.config);
    },
  },
  {
    operationId: 'getDaemon', method: 'get', path: '/api/v1/daemons/:id', group: 'Daemons', auth: 'Viewer', summary: 'Get a daemon with its computed version_status (as of `at`)',
    params: idParams, query: Joi.object({ at: at() }), response: daemonResponse,
    handler: ({ db, scope, params, query }) => daemonService.get(db, scope, params.id, query.at),
  },
  {
    operationId: 'updateDaemon', method: 'put', path: '/api/v1/daemons/:id', group: 'Daemons', auth: 'Admin', summary: 'Replace a daemon’s name, url and tags',
    params: idParams, body: daemonUpdateBody, response: daemonResponse,
    handler: ({ db, scope, params, body, services, afterCommit }) => {
      reconcileAfterCommit(afterCommit, services);
      return daemonService.update(db, scope, params.id, body, services.config);
    },
  },
  {
    operationId: 'deleteDaemon', method: 'delete', path: '/api/v1/daemons/:id', group: 'Daemons', auth: 'Admin', summary: 'Delete a daemon (its host and key stay)', params: idParams,
    handler: ({ db, scope, params, services, afterCommit }) => {
      reconcileAfterCommit(afterCommit, services);
      return daemonService.remove(db, scope, params.id);
    },
  },
  {
    operationId: 'retryDaemonConnection', method: 'post', path: '/api/v1/daemons/:id/retry-connection', group: 'Daemons', auth: 'Admin',
    summary: 'Poll an unreachable server_poll daemon again (400 for a daemon_poll daemon)', params: idParams, response: daemonResponse,
    handler: ({ db, scope, params }) => daemonService.retryConnection(db, scope, params.id),
  },
  {
    operationId: 'acceptDaemonSuggestedHost', method: 'post', path: '/api/v1/daemons/:id/accept-suggested-host', group: 'Daemons', auth: 'Admin',
    summary: 'Accept a daemon’s "same host?" suggestion (suggested_host_id, a host a person created that its self-report matched): the daemon moves to that host and its old host is deleted if nothing was ever added to it (404 when nothing is suggested)',
    params: idParams, response: daemonResponse,
    handler: ({ db, scope, params }) => daemonService.acceptSuggestedHost(db, scope, params.id),
  },
  {
    operationId: 'getDaemonHistory', method: 'get', path: '/api/v1/daemons/:id/history', group: 'Daemons', auth: 'Viewer', summary: 'Every state of a daemon, newest first', list: true,
    params: idParams, response: daemonResponse,
    handler: ({ db, scope, params }) => daemonService.history(db, scope, params.id),
  },
  {
    operationId: 'listDaemonSessions', method: 'get', path: '/api/v1/daemons/:id/sessions', group: 'Daemons', auth: 'Viewer', list: true,
    summary: `A daemon’s discovery sessions, newest first (at most ${SESSIONS_SHOWN}): phase, progress, error (why it failed or stalled, or the daemon’s warning), an ended Network session’s summary (hosts found, new, changed, unchanged, gone) and our agent’s report`,
    params: idParams, response: discoverySessionResponse,
    handler: async ({ db, scope, params }) => {
      await daemonTable.get(db, scope, params.id); // 404 / 403 as every daemon read
      return listDaemonSessions(db, scope.organizationId, params.id);
    },
  },
  // Operators' sessions: "scan now" and cancel, managed like the daemon's other writes.
  {
    operationId: 'scanDaemonNow', method: 'post', path: '/api/v1/daemons/:id/sessions', group: 'Daemons', auth: 'Admin', status: 201, errors: [409],
    summary: 'Scan now: queue a Network discovery of the daemon’s approved targets (filled in when it is handed out); 409 discovery_no_target when none is approved, discovery_session_active while one is pending or running',
    params: idParams, response: discoverySessionResponse,
    handler: ({ db, scope, params }) => db.transaction(async (tx) => {
      const daemon = await daemonTable.get(tx, scope, params.id, undefined, true); // 404 / 403; serialises with request-work
      return queueNetworkScan(tx, {
        id: daemon.id as string, organization_id: daemon.organization_id as string, network_id: daemon.network_id as string,
        host_id: daemon.host_id as string | null, capabilities: (daemon.capabilities ?? {}) as DaemonRef['capabilities'],
      });
    }),
  },
  {
    operationId: 'cancelDaemonSession', method: 'post', path: '/api/v1/daemons/:id/sessions/:session_id/cancel', group: 'Daemons', auth: 'Admin', status: 202, errors: [409],
    summary: 'Cancel a discovery session: a pending one ends now (Cancelled); a running one is asked to stop (cancel_requested; the daemon ends it); 409 when it has ended',
    params: sessionParams, response: discoverySessionResponse,
    handler: ({ db, scope, params }) => db.transaction(async (tx) => {
      await daemonTable.get(tx, scope, params.id, undefined, true);
      return cancelSession(tx, scope.organizationId, params.id, params.session_id);
    }),
  },
  // What the daemon may scan: read like the daemon, approved and revoked like its other writes.
  {
    operationId: 'listDaemonTargets', method: 'get', path: '/api/v1/daemons/:id/targets', group: 'Daemons', auth: 'Viewer',
    summary: 'The subnets a daemon is approved to scan, and the ones it suggests (its own subnets, not approved)',
    params: idParams, response: targetsResponse,
    handler: ({ db, scope, params }) => daemonTargets.list(db, scope, params.id),
  },
  {
    operationId: 'approveDaemonTarget', method: 'post', path: '/api/v1/daemons/:id/targets', group: 'Daemons', auth: 'Admin',
    summary: 'Approve a subnet of the daemon’s network for it to scan (by subnet_id or cidr; approving it again changes nothing). The daemon’s first approved subnet also queues its first Network discovery',
    params: idParams, body: targetBody, response: approvedTargetResponse,
    handler: ({ db, scope, params, body }) => daemonTargets.approve(db, scope, params.id, body),
  },
  {
    operationId: 'updateDaemonTarget', method: 'patch', path: '/api/v1/daemons/:id/targets/:subnet_id', group: 'Daemons', auth: 'Admin',
    summary: 'Change what an approval lets the daemon do on that subnet: SNMP `public`, the raw printing ports (404 when it is not approved)',
    params: targetParams, body: targetUpdateBody, response: approvedTargetResponse,
    handler: ({ db, scope, params, body }) => daemonTargets.update(db, scope, params.id, params.subnet_id, body),
  },
  {
    operationId: 'revokeDaemonTarget', method: 'delete', path: '/api/v1/daemons/:id/targets/:subnet_id', group: 'Daemons', auth: 'Admin',
    summary: 'Revoke a daemon’s approval to scan a subnet (404 when it is not approved)', params: targetParams,
    handler: ({ db, scope, params }) => daemonTargets.revoke(db, scope, params.id, params.subnet_id),
  },
]);

export const daemonRoutes = [...daemonRoutesDeclared, ...bulkRoutes(daemonRoutesDeclared, {
  path: '/api/v1/daemons', group: 'Daemons', entity: ['Daemon', 'Daemons'],
  schemas: { list: daemonListQuery, response: daemonResponse },
  list: (db, scope, q) => daemonService.list(db, scope, q),
  remove: (db, scope, id, req) => {
    reconcileAfterCommit(req.afterCommit, req.services);
    return daemonService.remove(db, scope, id);
  },
})];

// ---- The daemon protocol (Bearer scp_d_… with X-Daemon-ID; reference daemon-protocol §1.1) ----------
const daemonParams = Joi.object({ id: anyUuid().required() });

export const daemonProtocolRoutes = defineRoutes([
  {
    // Ours, not Scanopy's: the startup announcement answers 404 for an unknown daemon with any valid
    // key, of any network, and register creates a daemon; this only reads the key's own network.
    group: 'Daemon protocol', auth: 'daemon', operationId: 'describeDaemonKey', method: 'get', path: '/api/daemons/key', response: daemonKeyNetworkResponse,
    summary: 'The network of the daemon key presented (a key the server refuses is 401): our agent checks a key it is given with this before keeping it',
    handler: async ({ scope }) => ({ network_id: [...scope.networkIds][0] }),
  },
  {
    group: 'Daemon protocol', auth: 'daemon', operationId: 'registerDaemon', method: 'post', path: '/api/daemons/register', body: registerBody,
    summary: 'Register a daemon (a new id creates it, its placeholder host and its default discovery sessions; a known one is updated)',
    handler: ({ db, scope, body }) => daemonProtocol.register(db, scope, body),
  },
  {
    group: 'Daemon protocol', auth: 'daemon', operationId: 'announceDaemonStartup', method: 'post', path: '/api/daemons/:id/startup', params: daemonParams, body: startupBody,
    summary: 'Announce a known daemon’s version; 404 entity_not_found for an unknown daemon (it then registers)',
    handler: ({ db, scope, params, body }) => daemonProtocol.startup(db, scope, params.id, body.daemon_version),
  },
  {
    group: 'Daemon protocol', auth: 'daemon', operationId: 'requestDaemonWork', method: 'post', path: '/api/daemons/:id/request-work', params: daemonParams, body: requestWorkBody,
    summary: 'The heartbeat: answers [work | null, cancel]',
    handler: ({ db, scope, params, body }) => daemonProtocol.requestWork(db, scope, params.id, body),
  },
  {
    group: 'Daemon protocol', auth: 'daemon', operationId: 'updateDaemonCapabilities', method: 'post', path: '/api/daemons/:id/update-capabilities', params: daemonParams, body: capabilities(),
    summary: 'Store what the daemon can see (Docker socket, the subnets it is on)',
    handler: ({ db, scope, params, body }) => daemonProtocol.updateCapabilities(db, scope, params.id, body),
  },
  {
    group: 'Daemon protocol', auth: 'daemon', operationId: 'sendDaemonHeartbeat', method: 'post', path: '/api/daemons/:id/heartbeat', params: daemonParams, body: heartbeatBody,
    summary: 'Legacy heartbeat of daemons before 0.14',
    handler: ({ db, scope, params, body }) => daemonProtocol.heartbeat(db, scope, params.id, body),
  },
]);
