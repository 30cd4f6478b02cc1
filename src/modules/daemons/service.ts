// Daemons for users (spec §4.5, decisions §7): list, read (with version_status), provision a
// server_poll daemon, rename / re-point / tag, delete, retry a server_poll connection, history.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../core/db.js';
import type { AppConfig } from '../../config.js';
import { AppError } from '../../core/errors.js';
import { OutboundPolicy, OutboundRefused } from '../../core/outboundPolicy.js';
import type { Row } from '../../core/historyTable.js';
import type { Scope } from '../../core/scope.js';
import { assertSameId } from '../../http/schemas.js';
import { insertDaemonKey } from '../daemonKeys/service.js';
import { hostTable } from '../hosts/table.js';
import { listNetworkScoped } from '../networks/scopedList.js';
import { networkService } from '../networks/service.js';
import { normaliseFingerprint } from '../serverPoll/client.js';
import { pairAgent, type Paired } from '../serverPoll/pairing.js';
import { tagService } from '../tags/service.js';
import { deleteUntouchedPlaceholder } from '../discovery/selfReport.js';
import { daemonTable } from './table.js';
import { daemonView } from './view.js';

export const EMPTY_CAPABILITIES = { has_docker_socket: false, interfaced_subnet_ids: [] as string[] };

export interface ProvisionInput { name: string; network_id: string; url: string; pairing_code?: string; tls_fingerprint?: string }
export interface DaemonUpdateInput { id?: string; name: string; url: string; tags: string[]; expected_updated_at?: string | null }

const ORDER = { name: 'name', created_at: 'created_at', updated_at: 'updated_at' };

/** A daemon URL the server would refuse to poll is refused when saved (400), not discovered at the first poll. */
async function assertDaemonUrlAllowed(url: string, config: Pick<AppConfig, 'daemonAllowedNetworks'>): Promise<void> {
  try {
    await new OutboundPolicy(config.daemonAllowedNetworks).check(url);
  } catch (err) {
    if (!(err instanceof OutboundRefused)) throw err;
    throw new AppError('outbound_address_refused', { field: 'url', reason: err.reason, detail: err.detail });
  }
}

/**
 * Daemons as answered: each with its current poll error (`last_error`, `last_error_at`; null when
 * its last contact worked). One query per page.
 */
async function present(db: Db, organizationId: string, rows: Row[]) {
  const ids = rows.map((r) => r.id as string);
  const errors = ids.length
    ? await db.query<{ daemon_id: string; last_error: string; last_error_at: unknown }>(
      `select daemon_id, last_error, last_error_at from daemon_poll_errors where organization_id = ? and daemon_id = any(?::uuid[])`, [organizationId, ids])
    : [];
  const byId = new Map(errors.map((e) => [e.daemon_id, e]));
  return rows.map((r) => daemonView({ ...r, last_error: byId.get(r.id as string)?.last_error ?? null, last_error_at: byId.get(r.id as string)?.last_error_at ?? null }));
}
const presentOne = async (db: Db, scope: Scope, row: Row) => (await present(db, scope.organizationId, [row]))[0]!;

/** A provisioned daemon's rows besides its key: the host it runs on (source System) and the daemon. */
async function insertProvisioned(tx: Db, scope: Scope, input: ProvisionInput, apiKeyId: string): Promise<Row> {
  const owned = { organization_id: scope.organizationId, network_id: input.network_id };
  const host = await hostTable.insert(tx, { ...owned, id: randomUUID(), name: input.name, source: { type: 'System' }, tags: [], credential_assignments: [] });
  return daemonTable.insert(tx, {
    ...owned, id: randomUUID(), host_id: host.id, user_id: scope.userId || null, api_key_id: apiKeyId, name: input.name,
    mode: 'server_poll', url: input.url, tags: [], capabilities: EMPTY_CAPABILITIES,
  });
}

const daemonKeyFor = (scope: Scope, input: ProvisionInput) => ({
  organizationId: scope.organizationId, networkId: input.network_id, userId: scope.userId,
  name: `${input.name} API Key`.slice(0, 100), serverKey: true,
});

export const daemonService = {
  list: (db: Db, scope: Scope, q: Record<string, any>) =>
    listNetworkScoped(daemonTable, db, scope, q, { order: ORDER, present: (d, s, rows) => present(d, s.organizationId, rows) }),

  get: async (db: Db, scope: Scope, id: string, at?: string) => presentOne(db, scope, await daemonTable.get(db, scope, id, at)),

  /**
   * A server_poll daemon (reference §1.2 step 0): its key (the plaintext kept for the server's
   * calls, and answered here once), the host it runs on (source System) and the daemon itself. Its
   * version stays unknown until the server first reaches it.
   */
  async provision(db: Db, scope: Scope, input: ProvisionInput, config: Pick<AppConfig, 'daemonAllowedNetworks'>) {
    await assertDaemonUrlAllowed(input.url, config);
    return db.transaction(async (tx) => {
      await networkService.assertWritable(tx, scope, input.network_id);
      const { api_key, key } = await insertDaemonKey(tx, daemonKeyFor(scope, input));
      const daemon = await insertProvisioned(tx, scope, input, api_key.id);
      return { daemon: daemonView(daemon), daemon_api_key: key };
    });
  },

  /**
   * Provision with a pairing code: the server gives the agent its key itself (../serverPoll/pairing.ts)
   * and keeps the daemon only if the agent took it. The agent checks the key with this server, on
   * another connection, before it answers: so the key is committed first, through `own`, a Db of its
   * own (never the request's transaction, which an Idempotency-Key opens), and the host and daemon
   * follow once the agent has said yes. Refused or unreachable (422 / 502), the key is deleted again
   * and nothing remains. Over https the certificate the agent presented is pinned on the key.
   */
  async provisionPaired(own: Db, scope: Scope, input: ProvisionInput & { pairing_code: string }, config: Pick<AppConfig, 'daemonAllowedNetworks'>) {
    await assertDaemonUrlAllowed(input.url, config);
    if (input.tls_fingerprint && new URL(input.url).protocol !== 'https:') {
      throw new AppError('validation_failed', { field: 'tls_fingerprint', reason: 'tls_fingerprint needs an https url' });
    }
    const { api_key, key } = await own.transaction(async (tx) => {
      await networkService.assertWritable(tx, scope, input.network_id);
      return insertDaemonKey(tx, daemonKeyFor(scope, input));
    });
    let paired: Paired;
    try {
      paired = await pairAgent({
        url: input.url, networkId: input.network_id, apiKey: key, pairingCode: input.pairing_code,
        expectedFingerprint: input.tls_fingerprint ? normaliseFingerprint(input.tls_fingerprint) : null,
      }, new OutboundPolicy(config.daemonAllowedNetworks));
    } catch (err) {
      await own.query(`delete from daemon_api_keys where organization_id = ? and id = ?`, [scope.organizationId, api_key.id]);
      throw err;
    }
    return own.transaction(async (tx) => {
      if (paired.tlsFingerprint) {
        await tx.query(`update daemon_api_keys set tls_fingerprint = ? where organization_id = ? and id = ?`, [paired.tlsFingerprint, scope.organizationId, api_key.id]);
      }
      const daemon = await insertProvisioned(tx, scope, input, api_key.id);
      return { daemon: daemonView(daemon), daemon_api_key: key, pairing: { paired: true, message: paired.message, tls_fingerprint: paired.tlsFingerprint } };
    });
  },

  async update(db: Db, scope: Scope, id: string, input: DaemonUpdateInput, config: Pick<AppConfig, 'daemonAllowedNetworks'>) {
    assertSameId(id, input.id);
    if (input.url) await assertDaemonUrlAllowed(input.url, config);
    return db.transaction(async (tx) => {
      await tagService.assertTagsExist(tx, scope, input.tags);
      return presentOne(tx, scope, await daemonTable.update(tx, scope, id, { name: input.name, url: input.url, tags: input.tags }, input.expected_updated_at));
    });
  },

  /** The daemon and its discovery sessions go; its host and its key stay (inventory, and the key's own resource). */
  remove: (db: Db, scope: Scope, id: string) => db.transaction((tx) => daemonTable.remove(tx, scope, id)),

  /** A server_poll daemon marked unreachable is polled again (reference §1.2 point 5). */
  async retryConnection(db: Db, scope: Scope, id: string) {
    return db.transaction(async (tx) => {
      const daemon = await daemonTable.get(tx, scope, id, undefined, true);
      if (daemon.mode !== 'server_poll') throw new AppError('daemon_mode_mismatch', { id, mode: String(daemon.mode), required: 'server_poll' });
      return presentOne(tx, scope, await daemonTable.update(tx, scope, id, { is_unreachable: false, consecutive_failures: 0 }));
    });
  },

  /**
   * A person accepts the daemon's "same host?" suggestion (discovery/selfReport.ts): the daemon moves
   * to the suggested host, and its old one is deleted when nothing was ever added to it.
   */
  async acceptSuggestedHost(db: Db, scope: Scope, id: string) {
    return db.transaction(async (tx) => {
      const daemon = await daemonTable.get(tx, scope, id, undefined, true);
      const suggested = daemon.suggested_host_id as string | null;
      if (!suggested) throw new AppError('entity_not_found', { entity: 'Suggested host of daemon', id });
      await hostTable.get(tx, scope, suggested); // still there, and visible to this user
      const moved = await daemonTable.update(tx, scope, id, { host_id: suggested, suggested_host_id: null });
      if (daemon.host_id) await deleteUntouchedPlaceholder(tx, scope.organizationId, daemon.host_id as string);
      return presentOne(tx, scope, moved);
    });
  },

  history: async (db: Db, scope: Scope, id: string) => present(db, scope.organizationId, await daemonTable.history(db, scope, id)),
};
