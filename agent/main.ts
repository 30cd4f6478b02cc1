// The NetInventory discovery agent: `npm run agent -- --server <url> --key <scp_d_…> …` (flags in
// ./config.ts). It speaks only the Scanopy 0.14 daemon protocol the server serves, in either mode:
//   daemon_poll: startup (→ register when unknown; a new daemon first scans its --targets, if any)
//                then request-work every interval, running the work;
//   server_poll: serves its own API (./protocol/serverPollApi.ts) and the server pulls;
//   --once --targets …: one Network session of those targets, then exit (0 Complete, 1 otherwise).
// It scans only what it is given (--targets, or subnets approved for it on the server).
import { randomUUID } from 'node:crypto';
import { readFileSync, realpathSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AGENT_VERSION, parseConfig, USAGE, UsageError, type AgentConfig } from './config.js';
import { ServerClient, ServerError, type WorkPayload } from './protocol/client.js';
import { networkDiscoveryType, NIL } from './protocol/entities.js';
import { certificateFingerprint, generatePairingCode, PairingRefused, selfSignedCertificate, ServerPollApi } from './protocol/serverPollApi.js';
import { runSession, type Log, type RunnerDeps, type SessionResult, type Transport } from './runner.js';
import { anyDockerAnswers } from './docker.js';
import type { ScanNetwork } from './scan/types.js';
import type { LocalHost } from './selfReport.js';
import { loadState, saveState, type AgentState } from './state.js';

export type ExplainAddress = (address: string, options: { budget?: { probesPerSecond: number; maxOpenSockets: number }; signal?: AbortSignal }) => Promise<string>;

export interface AgentDeps {
  /** The scanner (default: agent/scan/scan.ts). Tests inject a fake: no probe leaves the test. */
  scanNetwork?: ScanNetwork;
  explainAddress?: ExplainAddress;
  log?: Log;
  fetch?: typeof fetch;
  /** Ends the daemon_poll / server_poll loop (and cancels a running session). */
  stop?: AbortSignal;
  readLocal?: () => LocalHost;
  /** Multiplies retry waits (tests: 0). */
  backoffScale?: number;
  progressMinMs?: number;
  keepAliveMs?: number;
  /** server_poll: the port the agent's API listens on (after listen). */
  onListening?: (port: number) => void;
  onSession?: (result: SessionResult) => void;
  /** Where --explain prints (default stdout). */
  out?: (text: string) => void;
}

export const consoleLog = (level: string = process.env.AGENT_LOG_LEVEL || 'info'): Log => {
  const order = ['debug', 'info', 'warn', 'error'];
  const write = (l: string) => (msg: string, extra?: Record<string, unknown>) => {
    if (order.indexOf(l) < order.indexOf(level)) return;
    process.stderr.write(`${new Date().toISOString()} ${l.toUpperCase()} ${msg}${extra ? ` ${JSON.stringify(extra)}` : ''}\n`);
  };
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') };
};

const sleep = (ms: number, signal?: AbortSignal) => new Promise<void>((resolve) => {
  if (signal?.aborted) return resolve();
  const timer = setTimeout(resolve, ms);
  signal?.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
});

// Loaded on first use, so --help and a usage error never load the scanner.
async function defaultScanNetwork(): Promise<ScanNetwork> {
  const mod = (await import('./scan/scan.js')) as { scanNetwork: ScanNetwork };
  return mod.scanNetwork;
}

async function defaultExplain(): Promise<ExplainAddress> {
  const mod = (await import('./fingerprint/explain.js')) as { explainAddress: ExplainAddress };
  return mod.explainAddress;
}

/**
 * startup; an unknown daemon (404 entity_not_found) or a key still being made (401 auth_daemon_key_not_created)
 * registers. Answers whether it registered (a new daemon).
 */
async function announce(client: ServerClient, config: AgentConfig, state: AgentState, log: Log, register: boolean): Promise<boolean> {
  try {
    const caps = await client.startup();
    for (const w of (caps.deprecation_warnings as Array<{ message: string }> | undefined) ?? []) log.warn(`server: ${w.message}`);
    return false;
  } catch (err) {
    const code = err instanceof ServerError ? err.code : null;
    if (!register || (code !== 'entity_not_found' && code !== 'auth_daemon_key_not_created')) {
      log.warn('startup not accepted; going on', { err: (err as Error).message });
      return false;
    }
  }
  const answer = await client.register({
    // Without --network: nil asks the server for the key's network, learnt from the answer.
    daemon_id: client.daemonId, network_id: state.networkId ?? NIL, name: config.name, mode: 'daemon_poll',
    capabilities: { has_docker_socket: await anyDockerAnswers(config.docker ?? []), interfaced_subnet_ids: [] }, user_id: NIL, version: AGENT_VERSION,
  });
  state.networkId ??= answer.daemon.network_id as string;
  log.info('registered', { daemon_id: answer.daemon.id, host_id: answer.host_id, network_id: answer.daemon.network_id });
  return true;
}

/** The transport of daemon_poll and --once: every report posted to the server as it comes. */
function postingTransport(client: ServerClient): Transport {
  return {
    postSubnet: (body) => client.postEntity('/api/v1/subnets', body),
    listSubnets: () => client.listSubnets() as Promise<Array<{ id: string; cidr: string }>>,
    postHost: async (request) => { await client.postEntity('/api/v1/hosts/discovery', request); },
    update: async (payload) => { await client.update(payload); },
    updateCapabilities: async (c) => { await client.updateCapabilities(c); },
  };
}

/** Runs the agent until done (--once) or stopped; answers the process exit code. */
export async function runAgent(config: AgentConfig, deps: AgentDeps = {}): Promise<number> {
  const log = deps.log ?? consoleLog();
  const stop = deps.stop ?? new AbortController().signal;
  if (config.explain) {
    const explain = deps.explainAddress ?? (await defaultExplain());
    const text = await explain(config.explain, { budget: { probesPerSecond: config.pps, maxOpenSockets: config.sockets }, signal: stop });
    (deps.out ?? ((t: string) => process.stdout.write(t)))(`${text}\n`);
    return 0;
  }
  for (const warning of config.warnings ?? []) log.warn(warning);
  const state = loadState(config.statePath);
  const save = () => saveState(config.statePath, state);
  state.daemonId ??= randomUUID();
  if (config.network) state.networkId = config.network;
  save();
  const scanNetwork = deps.scanNetwork ?? (await defaultScanNetwork());
  // The configured key, else the one a server_poll agent was paired with.
  const key = config.key ?? state.apiKey ?? null;
  const clientFor = (k: string) => new ServerClient({ server: config.server, key: k, daemonId: state.daemonId!, fetch: deps.fetch, backoffScale: deps.backoffScale, signal: stop, log });
  const runnerDeps = (transport: Transport, listenPort: number | null): RunnerDeps => ({
    transport, scanNetwork, state, saveState: save, config, networkId: state.networkId!, daemonId: state.daemonId!, log, listenPort,
    progressMinMs: deps.progressMinMs, keepAliveMs: deps.keepAliveMs,
    readLocal: deps.readLocal,
  });
  const run = async (work: { session_id: string; discovery_type: WorkPayload['discovery_type'] }, signal: AbortSignal, transport: Transport, listenPort: number | null) => {
    log.info('session started', { session_id: work.session_id, type: work.discovery_type.type });
    const result = await runSession(work, signal, runnerDeps(transport, listenPort));
    deps.onSession?.(result);
    return result;
  };

  if (config.mode === 'server_poll' && !config.once) return serverPoll(config, deps, { state, save, key, clientFor, run, log, stop });

  const client = clientFor(key!);
  const registered = await announce(client, config, state, log, true);
  if (!state.networkId) throw new Error('the server did not say which network the key belongs to: give --network <uuid>');
  save();

  if (config.once) {
    // Our own session: the server creates it from the first update (reference §3.3).
    const controller = new AbortController();
    const onStop = () => controller.abort();
    stop.addEventListener('abort', onStop, { once: true });
    const result = await run({ session_id: randomUUID(), discovery_type: networkDiscoveryType(null, { probe_raw_socket_ports: config.probeRawSocketPorts }) },
      controller.signal, postingTransport(client), null);
    stop.removeEventListener('abort', onStop);
    return result.terminal.phase === 'Complete' ? 0 : 1;
  }

  // daemon_poll: request-work is the heartbeat; its cancel flag stops the running session.
  type Running = { id: string; controller: AbortController; done: Promise<unknown> };
  let running: Running | null = null;
  const live = new Set<Running>(); // running, finishing or waiting to run: all cancelled when the agent stops
  const begin = (work: { session_id: string; discovery_type: WorkPayload['discovery_type'] }, transport: Transport, after?: Promise<unknown>) => {
    const controller = new AbortController();
    const session: Running = { id: work.session_id, controller, done: Promise.resolve() };
    session.done = Promise.resolve(after).then(() => run(work, controller.signal, transport, null))
      .catch((err) => log.error('session crashed', { err: (err as Error).message }))
      .finally(() => { live.delete(session); if (running === session) running = null; });
    live.add(session);
    return session;
  };
  if (registered && config.targets.length) {
    // A new daemon given --targets (consent to scan them) scans them at once, in a session of its own
    // as --once does: the server queues no Network session before an operator approves a subnet for it.
    // Its first update creates the session on the server, which then hands out no other work while it
    // runs (and cancels it through request-work): the first request-work waits for that update.
    let created!: () => void;
    const firstUpdate = new Promise<void>((resolve) => { created = resolve; });
    const transport = postingTransport(client);
    const update = transport.update;
    transport.update = (payload) => update(payload).finally(created);
    running = begin({ session_id: randomUUID(), discovery_type: networkDiscoveryType(null, { probe_raw_socket_ports: config.probeRawSocketPorts }) }, transport);
    await Promise.race([firstUpdate, running.done]);
  }
  while (!stop.aborted) {
    try {
      const [work, cancel] = await client.requestWork({ name: config.name, mode: 'daemon_poll', version: AGENT_VERSION });
      if (cancel && running) {
        log.info('cancel requested by the server', { session_id: running.id });
        running.controller.abort();
      }
      // Work comes only once the server stored the running session's end: a session still running here
      // is finishing (the answer to its last update on its way). The work waits for it, never dropped.
      if (work) running = begin(work, postingTransport(client), running?.done);
    } catch (err) {
      if (stop.aborted) break;
      const code = err instanceof ServerError ? err.code : null;
      log.warn('request-work failed', { err: (err as Error).message });
      if (code === 'daemon_standby') await sleep(2 ** 31 - 1, stop); // upstream waits for Ctrl+C
    }
    await sleep(config.intervalMs, stop);
  }
  for (const session of live) session.controller.abort();
  await Promise.all([...live].map((session) => session.done));
  return 0;
}

interface ServerPollContext {
  state: AgentState;
  save(): void;
  key: string | null;
  clientFor(key: string): ServerClient;
  run(work: { session_id: string; discovery_type: WorkPayload['discovery_type'] }, signal: AbortSignal, transport: Transport, listenPort: number | null): Promise<SessionResult>;
  log: Log;
  stop: AbortSignal;
}

async function serverPoll(config: AgentConfig, deps: AgentDeps, ctx: ServerPollContext): Promise<number> {
  const { state, log, stop } = ctx;
  let key = ctx.key;
  let capabilities = { has_docker_socket: await anyDockerAnswers(config.docker ?? []), interfaced_subnet_ids: [] as string[] };
  let port = 0;
  // The TLS certificate and key the API is served with (--tls-cert/--tls-key or --tls-self-signed), read now.
  const tls = ((): { cert: Buffer; key: Buffer } | undefined => {
    if (!config.tls) return undefined;
    const files = config.tls === 'self-signed' ? selfSignedCertificate(dirname(config.statePath)) : config.tls;
    try {
      const pems = { cert: readFileSync(files.cert), key: readFileSync(files.key) };
      certificateFingerprint(pems.cert); // a file that is no certificate is said now
      return pems;
    } catch (err) {
      throw new UsageError(`--tls-cert ${files.cert} / --tls-key ${files.key}: ${(err as Error).message}`);
    }
  })();

  /**
   * The network the server says a key is for (GET /api/daemons/key, which answers only for a key it
   * accepts: valid, enabled, not expired). Refused by the server (401/403): PairingRefused 422; no
   * usable answer: 502. The startup announcement proves less: an unknown daemon id answers 404 for
   * any valid key, of any network.
   */
  const networkOfKey = async (candidate: string): Promise<string> => {
    const client = new ServerClient({ server: config.server, key: candidate, daemonId: state.daemonId!, fetch: deps.fetch, timeoutMs: 10_000, log });
    try {
      const answer = await client.call<{ network_id?: unknown } | null>('GET', '/api/daemons/key');
      if (typeof answer?.network_id !== 'string') throw new ServerError('GET', '/api/daemons/key', 200, null, 'no network_id in the answer');
      return answer.network_id;
    } catch (err) {
      if (!(err instanceof ServerError)) throw err;
      if (err.status === 401 || err.status === 403) {
        throw new PairingRefused(422, `The server (${config.server}) refused this API key (${err.code ?? `HTTP ${err.status}`}): it was not kept`, 'key_refused');
      }
      throw new PairingRefused(502, `Could not check the API key with the server (${config.server}): ${err.message}; it was not kept`, 'server_unreachable');
    }
  };

  /** --key without --network: the key's network, asked of the server until it answers. */
  const learnNetwork = async (): Promise<void> => {
    while (!stop.aborted && key && !state.networkId) {
      try {
        state.networkId = await networkOfKey(key);
        ctx.save();
        log.info('the server says which network the key is for', { network_id: state.networkId });
        return;
      } catch (err) {
        log.warn('the network of the key is not known yet (sessions wait for it)', { err: (err as Error).message });
        await sleep(config.intervalMs, stop);
      }
    }
  };

  const pairingCode = key ? null : config.pairingCode ?? generatePairingCode();
  const api: ServerPollApi = new ServerPollApi({
    key: () => key,
    async initialize(networkId, apiKey, replacing) {
      // A key from the configuration would be back at the next start: it is changed there.
      if (replacing && config.key !== null) {
        throw new PairingRefused(409, 'This agent\'s key comes from its configuration (--key-file, AGENT_KEY or --key): change it there and restart the agent', 'key_from_configuration');
      }
      const keyNetwork = await networkOfKey(apiKey);
      if (keyNetwork !== networkId) throw new PairingRefused(422, `This API key is for network ${keyNetwork}, not ${networkId}: it was not kept`, 'network_mismatch');
      const before = { apiKey: state.apiKey, networkId: state.networkId };
      state.apiKey = apiKey; // the state file is 0600, as upstream's config
      state.networkId = networkId;
      try {
        ctx.save();
      } catch (err) {
        Object.assign(state, before);
        throw err;
      }
      key = apiKey;
    },
    firstContact(daemonId) {
      state.daemonId = daemonId;
      ctx.save();
    },
    status: () => ({ name: config.name, mode: 'server_poll', version: AGENT_VERSION, capabilities }),
    initiate: (work, signal) => {
      if (!key) throw new Error('not paired: POST /api/initialize with the pairing code first (or start the agent with --key-file)');
      if (!state.networkId) throw new Error('the network of the key is not known yet: the server has not answered GET /api/daemons/key');
      const outbound = { listSubnets: () => ctx.clientFor(key!).listSubnets() as Promise<Array<{ id: string; cidr: string }>> };
      const buffered = api.transport(outbound, (c) => { capabilities = c; }, signal);
      // The end of a session is also sent straight to the server (as upstream's server_poll daemons
      // try): a stopping agent is polled no more, and its session would otherwise stay running.
      const transport: Transport = {
        ...buffered,
        update: async (payload) => {
          await buffered.update(payload);
          if (['Complete', 'Failed', 'Cancelled'].includes(payload.phase)) {
            await ctx.clientFor(key!).update(payload).catch((err) => log.info('terminal update not sent directly (the next poll carries it)', { err: (err as Error).message }));
          }
        },
      };
      return ctx.run(work, signal, transport, port).catch((err) => log.error('session crashed', { err: (err as Error).message }));
    },
  }, { pairingCode, log });
  port = await api.listen(config.listen.host, config.listen.port, tls);
  log.info('server_poll API listening', { host: config.listen.host, port, tls: !!tls });
  // The server pins this at pairing (provision with pairing_code) and refuses another certificate afterwards.
  if (tls) log.info(`TLS certificate SHA-256 fingerprint ${certificateFingerprint(tls.cert)}`);
  if (!pairingCode) {
    // Nothing to print: the key came with the configuration or from an earlier pairing.
  } else if (config.pairingCode) {
    log.warn('not paired yet: waiting for POST /api/initialize with the pairing code given by --pairing-code / AGENT_PAIRING_CODE');
  } else {
    log.warn(`not paired yet: pairing code ${pairingCode} (give it with the key: provision this daemon on the server with pairing_code, or POST /api/initialize {network_id, api_key, pairing_code})`);
  }
  deps.onListening?.(port);
  if (key && !state.networkId) void learnNetwork();
  // A restarted agent tells the server (which ends its old running session); errors only logged.
  if (key) await ctx.clientFor(key).startup().catch((err) => log.info('startup not accepted (normal before first contact)', { err: (err as Error).message }));
  await new Promise<void>((resolve) => (stop.aborted ? resolve() : stop.addEventListener('abort', () => resolve(), { once: true })));
  await api.close();
  return 0;
}

/** The CLI: usage errors exit 2 with a message; SIGINT / SIGTERM cancel a running session and stop. */
export async function main(argv: string[]): Promise<number> {
  let config;
  try {
    config = parseConfig(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`netinventory-agent: ${err.message}\n${USAGE}\n`);
    return 2;
  }
  if (config.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const stop = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => stop.abort());
  try {
    return await runAgent(config, { stop: stop.signal });
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`netinventory-agent: ${err.message}\n`);
      return 2;
    }
    process.stderr.write(`netinventory-agent: ${(err as Error).message}\n`);
    return 1;
  }
}

// Whether this file is the program, not a module a test imports. The built agent (CommonJS, made by
// scripts/build.ts) is always the program: the build defines import.meta.main as true there, since
// CommonJS has no import.meta and a single executable's argv[1] is whatever name the user typed.
// Under tsx import.meta.main is undefined: the file named on the command line is compared instead.
const isMain = import.meta.main ?? (() => {
  try {
    return !!process.argv[1] && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
})();
// Not a top-level await: CommonJS has none.
if (isMain) void main(process.argv.slice(2)).then((code) => { process.exitCode = code; });
