// The daemon lifecycle of the Scanopy protocol (../shared/reference/daemon-protocol.md §1.1):
// startup, register, request-work (the heartbeat), update-capabilities and the legacy heartbeat.
// Callers are daemons (Scope kind 'daemon': one network, the X-Daemon-ID, the key). Answers are in
// the daemon's vocabulary (../discovery/vocabulary.ts).
import { randomUUID } from 'node:crypto';
import { ACROSS_ORGANIZATIONS, type Db } from '../../core/db.js';
import { AppError, accessDenied, notFound } from '../../core/errors.js';
import type { Row } from '../../core/historyTable.js';
import { replaceId, type Scope } from '../../core/scope.js';
import { hostTable } from '../hosts/table.js';
import { assertOwnNetwork, daemonContext } from '../discovery/ingest.js';
import { NIL } from '../discovery/hostIngest.js';
import { failSessionsOfRestartedDaemon, nextWork, queueDefaultSessions, type DaemonRef } from '../discovery/sessions.js';
import { daemonToDaemon, modeFromDaemon } from '../discovery/vocabulary.js';
import { daemonTable } from './table.js';
import { parseVersion } from './versionStatus.js';
import { serverCapabilities, type Capabilities } from './view.js';

export interface RegisterInput {
  daemon_id: string;
  network_id: string;
  name: string;
  mode: string;
  capabilities: Capabilities;
  version?: string | null;
}

export interface StatusInput {
  name?: string;
  mode?: string;
  version?: string | null;
}

const COLUMNS = `${daemonTable.spec.columns.join(', ')}, null::timestamptz as valid_to`;

/**
 * The daemon a daemon's request names: its own (path id = X-Daemon-ID, else 403
 * daemon_identity_mismatch), existing (404 entity_not_found, the daemon's cue to register) and on
 * its key's network (403 entity_access_denied).
 */
async function ownDaemon(db: Db, scope: Scope, id: string, lock = false): Promise<Row> {
  if (id !== scope.daemonId) throw new AppError('daemon_identity_mismatch', { daemon_id: id });
  const row = await db.one(`select ${COLUMNS} from daemons where id = ? and organization_id = ?${lock ? ' for update' : ''}`, [id, scope.organizationId]);
  if (!row || row.organization_id !== scope.organizationId) throw notFound('Daemon', id);
  if (!scope.networkIds.has(row.network_id as string)) throw accessDenied('Daemon', id);
  return row;
}

/**
 * What every contact records (reference §3.1): last_seen (a volatile column: no new state), and
 * name, mode and version when given (a new state when they change). The key's last use is recorded
 * for every daemon request by src/http/authenticate.ts (batched, src/modules/apiKeys/keyUsage.ts).
 */
async function touch(db: Db, organizationId: string, id: string, status: StatusInput = {}): Promise<Row> {
  return (await db.one(
    `update daemons set last_seen = now(), name = coalesce(?, name), mode = coalesce(?, mode), version = coalesce(?, version)
     where organization_id = ? and id = ? returning ${COLUMNS}`,
    [status.name ?? null, status.mode ? modeFromDaemon(status.mode) : null, status.version ?? null, organizationId, id],
  ))!;
}

/** The user a new daemon acts for: its key's, else the organization's first Owner. */
async function daemonUser(db: Db, scope: Scope): Promise<string | null> {
  if (scope.userId) return scope.userId;
  const owner = await db.one<{ id: string }>(
    `select id from users where organization_id = ? and permissions = 'Owner' order by created_at, id limit 1`, [scope.organizationId],
  );
  return owner?.id ?? null;
}

/** Register's write: the daemon's row created (with its host and default sessions) or updated. */
async function createOrUpdate(tx: Db, scope: Scope, input: RegisterInput, ctx: ReturnType<typeof daemonContext>, mode: string): Promise<Record<string, unknown>> {
  const existing = await tx.one(`select id from daemons where organization_id = ? and id = ?`, [ctx.organizationId, input.daemon_id]);
  if (existing) {
    await tx.query(
      `update daemons set capabilities = ?::jsonb, api_key_id = ? where organization_id = ? and id = ?`,
      [JSON.stringify(input.capabilities), scope.apiKeyId, ctx.organizationId, input.daemon_id],
    );
  } else {
    const host = await hostTable.insert(tx, {
      id: randomUUID(), organization_id: ctx.organizationId, network_id: ctx.networkId, name: input.name,
      source: { type: 'Discovery', metadata: [] }, tags: [], credential_assignments: [],
    });
    const daemon = await daemonTable.insert(tx, {
      id: input.daemon_id, organization_id: ctx.organizationId, network_id: ctx.networkId, host_id: host.id,
      user_id: await daemonUser(tx, scope), api_key_id: scope.apiKeyId, name: input.name, mode, url: '', tags: [],
      capabilities: input.capabilities, version: input.version ?? null,
    });
    await queueDefaultSessions(tx, daemon as unknown as DaemonRef);
  }
  const daemon = await touch(tx, ctx.organizationId, input.daemon_id, { name: input.name, mode, version: input.version });
  const out: Record<string, unknown> = { daemon: daemonToDaemon(daemon), host_id: daemon.host_id };
  if (parseVersion(daemon.version as string | null)) out.server_capabilities = serverCapabilities(daemon.version as string);
  return out;
}

export const daemonProtocol = {
  /** Step 1: a known daemon announces its version; an unknown one gets 404 and registers. */
  async startup(db: Db, scope: Scope, id: string, daemonVersion: string | null | undefined) {
    return db.transaction(async (tx) => {
      await ownDaemon(tx, scope, id, true); // the row lock: no request-work of this daemon in between
      const daemon = await touch(tx, scope.organizationId, id, { version: daemonVersion });
      // A daemon that starts runs nothing: what it was running ended with its previous process.
      await failSessionsOfRestartedDaemon(tx, scope.organizationId, id);
      return serverCapabilities(daemon.version as string | null);
    });
  },

  /**
   * Step 2: a new daemon id creates the daemon (with the id it chose), a placeholder host it runs on
   * and its default discovery sessions; a known one is updated. The body must name the caller itself
   * and its key's network (upstream takes both on trust; we do not).
   */
  async register(db: Db, scope: Scope, input: RegisterInput): Promise<Record<string, unknown>> {
    if (input.daemon_id !== scope.daemonId) throw new AppError('daemon_identity_mismatch', { daemon_id: input.daemon_id });
    const ctx = daemonContext(scope);
    // A nil network_id asks for the key's own network (our agent's way to learn it: a daemon key
    // belongs to one network, and nothing else in the protocol says which).
    if (input.network_id !== NIL) assertOwnNetwork(ctx, input.network_id);
    const mode = modeFromDaemon(input.mode);
    return db.transaction(async (tx) => {
      await tx.query(`select pg_advisory_xact_lock(hashtextextended(?, 0))`, [`daemon:${input.daemon_id}`]);
      // An id another network of the organization has used (live or deleted) is not taken over (403,
      // as upstream). One that another organization has used is answered as an unused one (issue
      // 10.6): the daemon gets a row of its own under a server-chosen id, and an alias keeps its own.
      const elsewhere = await tx.one<{ organization_id: string }>(
        `${ACROSS_ORGANIZATIONS} select organization_id from daemons_history where id = ? and network_id <> ? order by organization_id = ? desc limit 1`,
        [input.daemon_id, ctx.networkId, ctx.organizationId],
      );
      if (elsewhere?.organization_id === ctx.organizationId) throw accessDenied('Daemon', input.daemon_id);
      if (elsewhere) {
        const internal = randomUUID();
        const created = await createOrUpdate(tx, scope, { ...input, daemon_id: internal }, ctx, mode);
        await tx.query(`insert into daemon_aliases (organization_id, external_id, daemon_id) values (?, ?, ?)`, [ctx.organizationId, input.daemon_id, internal]);
        return replaceId(created, internal, input.daemon_id);
      }
      return createOrUpdate(tx, scope, input, ctx, mode);
    });
  },
  /** Step 3, the heartbeat: `[work | null, cancel]` (403 daemon_standby for a daemon in standby). */
  async requestWork(db: Db, scope: Scope, id: string, status: StatusInput) {
    return db.transaction(async (tx) => {
      const daemon = await ownDaemon(tx, scope, id, true); // the row lock serialises this daemon's polls
      if (daemon.standby) throw new AppError('daemon_standby');
      await touch(tx, scope.organizationId, id, status);
      return nextWork(tx, scope.organizationId, id);
    });
  },

  /** After SelfReport: what the daemon can see (stored as sent). */
  async updateCapabilities(db: Db, scope: Scope, id: string, capabilities: Capabilities) {
    await ownDaemon(db, scope, id);
    await db.query(`update daemons set capabilities = ?::jsonb, last_seen = now() where organization_id = ? and id = ?`, [JSON.stringify(capabilities), scope.organizationId, id]);
    return null;
  },

  /** Daemons before 0.14: the status part of request-work, without work. */
  async heartbeat(db: Db, scope: Scope, id: string, status: StatusInput) {
    const daemon = await ownDaemon(db, scope, id);
    if (daemon.standby) throw new AppError('daemon_standby');
    await touch(db, scope.organizationId, id, { name: status.name, mode: status.mode });
    return null;
  },
};
