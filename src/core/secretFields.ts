// THE declaration of which fields of a credential are secret, for every kind of credential a
// discovery type carries: an SNMP v2c/v1 `community`, an SNMPv3 user's `auth_password` and
// `priv_password`. A secret travels in plaintext only in the work handed to the daemon that needs
// it (request-work, the server_poll poller's initiate); everywhere else (the sessions a user reads,
// what a daemon reports back, entities' source metadata and so their events, webhooks and history)
// it is replaced by SECRET_MASK. The server (src/modules/discovery) and the agent (agent/protocol,
// agent/snmp) both use this module: a new secret field is added here, once.

/** Fields whose value is a secret, whatever object (credential) they are found in. */
export const SECRET_FIELDS: readonly string[] = ['community', 'auth_password', 'priv_password'];

/** What a secret is shown as. */
export const SECRET_MASK = '********';

const SECRET = new Set(SECRET_FIELDS);

/** A copy of `value` with every secret field, at any depth, masked (a null or absent one stays as it is). */
export function maskSecrets<T>(value: T): T {
  if (Array.isArray(value)) return value.map(maskSecrets) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, SECRET.has(k) && v !== null && v !== undefined ? SECRET_MASK : maskSecrets(v)])) as T;
  }
  return value;
}

/** Whether a secret field holds the mask (a credential read back from a masked copy: not usable). */
export const isMasked = (v: unknown): boolean => v === SECRET_MASK;
