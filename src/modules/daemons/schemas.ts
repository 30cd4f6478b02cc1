import Joi from 'joi';
import { body, entityId, listQuery, name, orderQuery, tagIds, timestamp, uuid } from '../../http/schemas.js';
import { sessionReport } from '../discovery/schemas.js';
import { SUMMARY_HOSTS_LISTED } from '../discovery/sessionSummary.js';
import { DAEMON_POLL_INTERVAL_MS, DAEMON_POLL_STALE_AFTER_MS } from './view.js';
import { networkCidr } from '../../http/cidr.js';

export const DAEMON_ORDER_FIELDS = ['name', 'created_at', 'updated_at'] as const;

const url = () => Joi.string().uri({ scheme: ['http', 'https'] }).max(2000);

const FINGERPRINT = /^[0-9A-Fa-f]{2}(:?[0-9A-Fa-f]{2}){31}$/;

export const provisionBody = body({
  name: name().required(),
  network_id: uuid().required(),
  url: url().required(),
  pairing_code: Joi.string().trim().min(12).max(80).description(
    'The pairing code our agent logs at start ("pairing code XXXX-XXXX-XXXX"; or the one it was given with --pairing-code). '
    + 'Given, the server pairs the agent itself: it calls POST /api/initialize at `url` with the new key and this code, and keeps the daemon only '
    + 'if the agent took the key (it checks the key with this server first). Refused by the agent (wrong code, pairing locked, already paired, key refused): '
    + '422 daemon_pairing_refused; no answer, not an agent, or another TLS certificate than tls_fingerprint: 502 daemon_pairing_failed. '
    + 'Either way nothing is kept: no daemon, no host, no key. Over https the certificate the agent presents is pinned: '
    + 'the server accepts no other one from this daemon afterwards. Left out: the daemon and its key are made, and the agent is given the key by hand.',
  ),
  tls_fingerprint: Joi.string().pattern(FINGERPRINT).description(
    'With pairing_code and an https url: the SHA-256 fingerprint of the agent\'s certificate (it logs it at start: AB:CD:…), '
    + 'checked before the key is sent. Left out, the certificate the agent presents at pairing is the one pinned.',
  ),
}).with('tls_fingerprint', 'pairing_code');

/** What a user may change (decisions §7); everything else a GET shows is accepted back and ignored. */
const READ_ONLY = [
  'host_id', 'suggested_host_id', 'network_id', 'api_key_id', 'mode', 'is_unreachable', 'is_stale', 'standby', 'standby_cleared_at', 'last_seen', 'version',
  'capabilities', 'interfaced_subnet_ids', 'consecutive_failures', 'last_error', 'last_error_at',
];
export const daemonUpdateBody = body({
  ...Object.fromEntries(READ_ONLY.map((k) => [k, Joi.any().strip()])),
  id: entityId(),
  name: name().required(),
  url: url().allow('').default(''),
  tags: tagIds().default([]),
  expected_updated_at: timestamp().allow(null),
});

export const daemonListQuery = listQuery({ ...orderQuery(DAEMON_ORDER_FIELDS), network_id: uuid() });

const ts = () => timestamp().allow(null);
const warning = Joi.object({ message: Joi.string(), severity: Joi.string().valid('Info', 'Warning', 'Critical'), sunset_date: Joi.string().optional().description('When the warning is about a sunset') });
export const versionStatusResponse = Joi.object({
  status: Joi.string().valid('Current', 'Outdated', 'Deprecated', 'Unsupported', 'Unknown'),
  version: Joi.string().allow(null),
  has_correct_docker_volume_mount: Joi.boolean(),
  supports_unified_discovery: Joi.boolean(),
  sunset_date: Joi.string().optional().description('When this version stops being supported (Deprecated)'),
  warnings: Joi.array().items(warning),
}).label('VersionStatus');

export const daemonResponse = Joi.object({
  id: uuid(), name: Joi.string(), host_id: uuid().allow(null), network_id: uuid(), user_id: uuid().allow(null), api_key_id: uuid().allow(null),
  suggested_host_id: uuid().allow(null).description('"Same host?": a host a person created that this daemon\'s self-report matched (address and MAC). A daemon adopts only hosts discovery created, so it stays on its own host; read-only, null when nothing is suggested'),
  mode: Joi.string().valid('daemon_poll', 'server_poll'), url: Joi.string().allow(''), tags: Joi.array().items(uuid()),
  is_unreachable: Joi.boolean(), standby: Joi.boolean(), standby_cleared_at: ts(), last_seen: ts(),
  is_stale: Joi.boolean().description(`daemon_poll: no contact for more than ${DAEMON_POLL_STALE_AFTER_MS / 1000} s (it polls every ${DAEMON_POLL_INTERVAL_MS / 1000} s), so it is not running: it exited (as an agent run with --once does) or was stopped; see last_seen. Always false for server_poll (see is_unreachable)`),
  version: Joi.string().allow(null),
  consecutive_failures: Joi.number().integer().description('Failed polls in a row (server_poll); is_unreachable from the fifth'),
  last_error: Joi.string().allow(null).description('Why the last poll of this server_poll daemon failed; null once a contact works again'),
  last_error_at: ts().description('When last_error happened'),
  capabilities: Joi.object({ has_docker_socket: Joi.boolean(), interfaced_subnet_ids: Joi.array().items(uuid()) }),
  interfaced_subnet_ids: Joi.array().items(uuid()),
  created_at: ts(), updated_at: ts(), lineage_id: uuid(), valid_from: ts(), valid_to: ts(),
  version_status: versionStatusResponse,
}).label('Daemon');

export const provisionResponse = Joi.object({
  daemon: daemonResponse,
  daemon_api_key: Joi.string().pattern(/^scp_d_[0-9A-Za-z]{32}$/),
  pairing: Joi.object({
    paired: Joi.boolean().valid(true),
    message: Joi.string().description('The agent\'s answer'),
    tls_fingerprint: Joi.string().allow(null).description('The certificate pinned (https); null over http'),
  }).label('DaemonPairing').optional().description('With pairing_code: the agent took the key'),
}).label('ProvisionedDaemon');

/** GET /api/daemons/key: what the server knows of the daemon key presented. */
export const daemonKeyNetworkResponse = Joi.object({
  network_id: uuid().description('The network the key belongs to'),
}).label('DaemonKeyNetwork');

// ---- Approved targets (./targets.ts) ----------------------------------------------------------
const targetOptions = {
  snmp_public: Joi.boolean().description('Ask the subnet’s live hosts over SNMP v2c with the community `public` (default true)'),
  probe_raw_socket_ports: Joi.boolean().description('Probe the raw printing ports 9100–9107 there (default false: a printer prints what it receives; a host known to be a printer is never sent a payload)'),
};

export const targetBody = body({
  subnet_id: uuid().description('A subnet of the daemon’s network'),
  cidr: networkCidr().description('Or the CIDR of a subnet of the daemon’s network (the subnet must exist)'),
  ...targetOptions,
}).xor('subnet_id', 'cidr');

export const targetUpdateBody = body(targetOptions).or('snmp_public', 'probe_raw_socket_ports').example({ probe_raw_socket_ports: true });

export const targetParams = Joi.object({ id: uuid().required(), subnet_id: uuid().required() });

export const approvedTargetResponse = Joi.object({
  subnet_id: uuid(), cidr: Joi.string(), name: Joi.string(), approved_at: timestamp(),
  approved_by: uuid().allow(null).description('The user who approved it (null: no user, or a removed one)'),
  snmp_public: targetOptions.snmp_public, probe_raw_socket_ports: targetOptions.probe_raw_socket_ports,
}).label('DaemonApprovedTarget');

export const targetsResponse = Joi.object({
  approved: Joi.array().items(approvedTargetResponse).description('Subnets the daemon is approved to scan: handed to it with its Network work'),
  suggested: Joi.array().items(Joi.object({ subnet_id: uuid(), cidr: Joi.string(), name: Joi.string() }).label('DaemonSuggestedTarget'))
    .description('Subnets the daemon reported being on (its SelfReport) that are not approved'),
}).label('DaemonTargets');

const count = (what: string) => Joi.number().integer().min(0).description(what);
const summaryHost = Joi.object({ id: uuid(), name: Joi.string() }).label('DiscoverySessionHost');

export const sessionSummaryResponse = Joi.object({
  hosts_found: count('Hosts this session reported (their last_discovery_id was this session when it ended)'),
  hosts_new: count('Found hosts this session created'),
  hosts_changed: count('Found hosts that existed before and changed: a column of the host, or an address, port, service, binding or interface this session wrote, differs from what it was when the session began, or a service of it stopped (source metadata and timestamps left out)'),
  hosts_unchanged: count('Found hosts that existed before and did not change'),
  hosts_gone: count('Hosts with an address in the scanned subnets that this daemon’s previous Network session found (its last Complete one, and any since) and that nothing found since; null when the session did not complete (a partial run says nothing of what it did not find)').allow(null),
  services_found: count('Services on the found hosts that this daemon’s network scans found'),
  new_hosts: Joi.array().items(summaryHost).max(SUMMARY_HOSTS_LISTED).description(`The first ${SUMMARY_HOSTS_LISTED} new hosts by name (hosts_new is the total)`),
  gone_hosts: Joi.array().items(summaryHost).max(SUMMARY_HOSTS_LISTED).description(`The first ${SUMMARY_HOSTS_LISTED} gone hosts by name (hosts_gone is the total)`),
  changed_hosts: Joi.array().items(summaryHost).max(SUMMARY_HOSTS_LISTED).optional().description(`The first ${SUMMARY_HOSTS_LISTED} changed hosts by name (hosts_changed is the total)`),
  hosts_offline: count('Hosts of the scanned subnets this completed session did not see that were online until then (now offline)').optional(),
  hosts_back_online: count('Offline hosts this session saw again').optional(),
  offline_hosts: Joi.array().items(summaryHost).max(SUMMARY_HOSTS_LISTED).optional().description(`The first ${SUMMARY_HOSTS_LISTED} hosts gone offline by name`),
  back_online_hosts: Joi.array().items(summaryHost).max(SUMMARY_HOSTS_LISTED).optional().description(`The first ${SUMMARY_HOSTS_LISTED} hosts back online by name`),
  scanned_subnet_ids: Joi.array().items(uuid()).description('The subnets the session scanned, as its daemon reported them (the approved subnets it was handed); when it named none, the subnets of the hosts it found'),
  compared_with_session_id: uuid().allow(null).description('The earlier Complete Network session of this daemon that "gone" compares with (null: none)'),
}).label('DiscoverySessionSummary');

/** A session's summary as every answer carrying one names it (one schema in the OpenAPI document). */
export const sessionSummaryField = sessionSummaryResponse.allow(null)
  .description('What an ended Network session did to the inventory, computed by the server when it ended (null: not a Network session, not ended yet, or ended before summaries existed)');

export const discoverySessionResponse = Joi.object({
  id: uuid(), daemon_id: uuid(), network_id: uuid(),
  discovery_type: Joi.object({ type: Joi.string().valid('SelfReport', 'Network', 'Docker') }).unknown(true).description('As queued (SNMP secrets masked: community, auth_password, priv_password)'),
  phase: Joi.string().valid('Pending', 'Starting', 'Started', 'Scanning', 'Complete', 'Failed', 'Cancelled'),
  progress: Joi.number().integer(),
  error: Joi.string().allow(null).description('Why it failed or stalled, or a warning the daemon sent with Complete (a run that found no host where there were hosts)'),
  cancel_requested: Joi.boolean(),
  started_at: timestamp().allow(null), finished_at: timestamp().allow(null), created_at: timestamp(), updated_at: timestamp(),
  report: sessionReport().allow(null).description('The run’s report, as the NetInventory agent sent it with its updates (null: none sent; Scanopy daemons never send one)'),
  summary: sessionSummaryField,
}).label('DiscoverySession');

export const sessionParams = Joi.object({ id: uuid().required(), session_id: uuid().required() });
