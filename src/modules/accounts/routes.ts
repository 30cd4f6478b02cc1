import { defineRoutes, type RequestInput } from '../../http/pipeline.js';
import { bulkRoutes } from '../../http/resourceRoutes.js';
import { setSessionCookie } from '../../http/authenticate.js';
import { idParams } from '../../http/schemas.js';
import { SESSION_COOKIE } from '../../core/principal.js';
import type { Db } from '../../core/db.js';
import { sha256Hex } from '../../core/secrets.js';
import type { Scope } from '../../core/scope.js';
import { revocationSubject, revokeStreamsAfterCommit } from '../events/revocations.js';
import {
  loginBody, meResponse, organizationBody, organizationResponse, registerBody, userCreateBody, userListQuery, userResponse, userUpdateBody,
} from './schemas.js';
import { accountService } from './service.js';

// A change to who may do what reaches the event streams before the answer, on every API process
// (events/revocations.ts): the streams of a signed-out session, of a removed user, and of an
// organization's keys once its API access is off end; a user whose role or grants changed has theirs
// checked again (narrowed, or ended if they follow a network no longer granted).

/** A user removed (alone or in a bulk delete): the streams of their sessions and keys ended once committed. */
async function removeUser(db: Db, scope: Scope, id: string, req: RequestInput<Scope>): Promise<void> {
  await accountService.removeUser(db, scope, id);
  revokeStreamsAfterCommit(req, 'end', [revocationSubject.user(id)]);
}

async function updateUser(req: RequestInput<Scope>) {
  const user = await accountService.updateUser(req.db, req.scope, req.params.id, req.body);
  revokeStreamsAfterCommit(req, 'recheck', [revocationSubject.user(user.id)]);
  return user;
}

const accountRoutesDeclared = defineRoutes([
  {
    operationId: 'register', method: 'post', path: '/api/auth/register', group: 'Auth', auth: 'public', limitByAddress: true, status: 201,
    summary: 'Create an organization, its Owner and a first network "Default"', body: registerBody, response: userResponse,
    handler: ({ db, services, body }) => accountService.register(db, services, body),
  },
  {
    operationId: 'login', method: 'post', path: '/api/auth/login', group: 'Auth', auth: 'public', limitByAddress: true,
    summary: 'Sign in: sets the `session_id` cookie (throttled per account and client address: see Security in the README)', body: loginBody, response: userResponse,
    handler: async ({ db, services, body, ctx }) => {
      const { user, sessionId } = await accountService.login(db, services, body, ctx.ip);
      setSessionCookie(ctx, services, sessionId);
      return user;
    },
  },
  {
    operationId: 'logout', method: 'post', path: '/api/auth/logout', group: 'Auth', auth: 'public', summary: 'Sign out: deletes the session',
    handler: async (req) => {
      const sessionId = req.ctx.cookies.get(SESSION_COOKIE);
      if (await accountService.logout(req.db, sessionId)) revokeStreamsAfterCommit(req, 'end', [revocationSubject.session(sha256Hex(sessionId!))]);
      req.ctx.cookies.set(SESSION_COOKIE, null);
      return null;
    },
  },
  {
    operationId: 'getCurrentUser', method: 'get', path: '/api/auth/me', group: 'Auth', auth: 'Viewer', summary: 'The signed-in user', response: meResponse,
    handler: ({ db, scope, services }) => accountService.me(db, scope, services.config),
  },
  {
    // Scanopy's clients call `POST /api/auth/me`; both verbs answer the same.
    operationId: 'getCurrentUserByPost', method: 'post', path: '/api/auth/me', group: 'Auth', auth: 'Viewer', summary: 'The signed-in user (Scanopy-compatible verb)', response: meResponse,
    handler: ({ db, scope, services }) => accountService.me(db, scope, services.config),
  },
  {
    operationId: 'listUsers', method: 'get', path: '/api/v1/users', group: 'Users', auth: 'Admin', summary: 'List the users of the organization',
    query: userListQuery, response: userResponse, paginated: true,
    handler: ({ db, scope, query }) => accountService.listUsers(db, scope, query as { limit: number; offset: number; ids?: string[] }),
  },
  {
    operationId: 'createUser', method: 'post', path: '/api/v1/users', group: 'Users', auth: 'Admin', organizationWide: true, status: 201,
    summary: 'Create a user of the organization (role at most the caller’s)', body: userCreateBody, response: userResponse,
    handler: ({ db, scope, body }) => accountService.createUser(db, scope, body),
  },
  {
    operationId: 'getUser', method: 'get', path: '/api/v1/users/:id', group: 'Users', auth: 'Admin', summary: 'Get a user', params: idParams, response: userResponse,
    handler: ({ db, scope, params }) => accountService.getUser(db, scope, params.id),
  },
  {
    operationId: 'updateUser', method: 'put', path: '/api/v1/users/:id', group: 'Users', auth: 'Admin', organizationWide: true, summary: 'Change a user’s role and network grants',
    params: idParams, body: userUpdateBody, response: userResponse,
    handler: updateUser,
  },
  {
    operationId: 'updateUserAsAdmin', method: 'put', path: '/api/v1/users/:id/admin', group: 'Users', auth: 'Admin', organizationWide: true,
    summary: 'Change a user’s role and network grants (Scanopy’s path for PUT /api/v1/users/{id})',
    params: idParams, body: userUpdateBody, response: userResponse,
    handler: updateUser,
  },
  {
    operationId: 'deleteUser', method: 'delete', path: '/api/v1/users/:id', group: 'Users', auth: 'Admin', organizationWide: true, summary: 'Remove a user from the organization', params: idParams,
    handler: (req) => removeUser(req.db, req.scope, req.params.id, req),
  },
  {
    operationId: 'getOrganization', method: 'get', path: '/api/v1/organizations/current', group: 'Organization', auth: 'Viewer', summary: 'The caller’s organization',
    response: organizationResponse,
    handler: ({ db, scope }) => accountService.getOrganization(db, scope),
  },
  {
    operationId: 'updateOrganization', method: 'put', path: '/api/v1/organizations/current', group: 'Organization', auth: 'Owner', organizationWide: true, sessionOnly: true,
    summary: 'Rename the organization, turn its API access on or off', body: organizationBody, response: organizationResponse,
    handler: async (req) => {
      const org = await accountService.updateOrganization(req.db, req.scope, req.body);
      if (!org.api_access_enabled) revokeStreamsAfterCommit(req, 'end', [revocationSubject.organizationKeys(org.id)]);
      return org;
    },
  },
]);

export const accountRoutes = [...accountRoutesDeclared, ...bulkRoutes(accountRoutesDeclared, {
  path: '/api/v1/users', group: 'Users', entity: ['User', 'Users'],
  schemas: { list: userListQuery, response: userResponse },
  list: (db, scope, q) => accountService.listUsers(db, scope, q as { limit: number; offset: number }),
  remove: removeUser,
})];
