// The server pairs a server_poll agent itself (provision with a pairing_code): it calls the agent's
// POST /api/initialize {network_id, api_key, pairing_code} at the daemon's url, through the outbound
// policy like every call to a daemon. The agent takes the key only with its one-time pairing code,
// and only once it has checked the key with this server (GET /api/daemons/key), so the key must be
// committed before this call. Over https the certificate the agent presents is returned, to be
// pinned: given `expectedFingerprint` (the one the agent logs at start), another one is refused
// before the key is sent.
import { AppError } from '../../core/errors.js';
import type { OutboundPolicy } from '../../core/outboundPolicy.js';
import { DaemonClient, DaemonRequestError } from './client.js';

/** The agent checks the key with this server before answering: one more round trip than a poll. */
export const PAIRING_TIMEOUT_MS = 20_000;

export interface PairingInput {
  url: string;
  networkId: string;
  apiKey: string;
  pairingCode: string;
  /** https: the certificate to expect (normalised, AB:CD:…); null: the first one presented is taken. */
  expectedFingerprint: string | null;
}

export interface Paired {
  /** The agent's answer ("Daemon initialized successfully"). */
  message: string;
  /** https: the certificate the agent presented (to pin); null over http. */
  tlsFingerprint: string | null;
}

/**
 * Pairs the agent at `input.url`, or throws 422 daemon_pairing_refused (the agent answered no: a
 * wrong or missing code, locked pairing, already paired, a key its server refused) or 502
 * daemon_pairing_failed (no answer, not an agent's answer, another certificate than expected).
 */
export async function pairAgent(input: PairingInput, policy: OutboundPolicy, timeoutMs = PAIRING_TIMEOUT_MS): Promise<Paired> {
  const https = input.url.toLowerCase().startsWith('https:');
  const client = new DaemonClient({
    baseUrl: input.url, apiKey: null, timeoutMs, policy,
    certificate: https ? { expected: input.expectedFingerprint } : undefined,
  });
  try {
    const answer = await client.initialize({ network_id: input.networkId, api_key: input.apiKey, pairing_code: input.pairingCode });
    return { message: answer.message, tlsFingerprint: https ? answer.certificate : null };
  } catch (err) {
    if (!(err instanceof DaemonRequestError)) throw err;
    const reason = (err.detail ?? err.message).slice(0, 500);
    if (err.reason === 'http' && err.status !== undefined && err.status >= 400 && err.status < 500) {
      throw new AppError('daemon_pairing_refused', { url: input.url, agent_status: err.status, reason });
    }
    const failure = err.reason === 'timeout' ? `no answer within ${timeoutMs / 1000} s`
      : err.reason === 'http' ? `HTTP ${err.status}: ${reason}`
        : err.reason === 'invalid_response' ? `not an agent's answer (${reason})`
          : reason;
    throw new AppError('daemon_pairing_failed', { url: input.url, agent_status: err.status ?? null, reason: failure });
  }
}
