// What the agent remembers between runs (one JSON file, --state, mode 0600): its daemon id and
// network, the key a server_poll agent was paired with, a run counter (which slice of the full port
// range this run adds), the open ports of each address (probed again next run, so a stopped service
// is noticed), how many hosts each target had, and, per address, when it was first found and the
// description sent then (reports stay byte-identical while nothing changes, so the server's digest
// makes an unchanged host cost nothing).
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export interface KnownHost {
  /** When the agent first found this address (the entities' created_at and metadata date). */
  firstSeen: string;
  description: string;
  ports: number[];
}

export interface AgentState {
  daemonId: string | null;
  networkId: string | null;
  /** server_poll: the key it was paired with (POST /api/initialize), kept only once the server accepted it. */
  apiKey?: string;
  runCounter: number;
  /** Per address. */
  hosts: Record<string, KnownHost>;
  /** Per target CIDR: live hosts found by the last run that scanned it. */
  targetHosts: Record<string, number>;
  /** When the agent first reported itself (its self-report's dates, stable like the hosts'). */
  selfSince?: string;
}

export const emptyState = (): AgentState => ({ daemonId: null, networkId: null, runCounter: 0, hosts: {}, targetHosts: {} });

export function loadState(path: string): AgentState {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return emptyState();
    throw err;
  }
  const parsed = JSON.parse(text) as Partial<AgentState>;
  return { ...emptyState(), ...parsed, hosts: parsed.hosts ?? {}, targetHosts: parsed.targetHosts ?? {} };
}

/** Written to a temporary file and renamed: a killed agent never leaves half a state file. */
export function saveState(path: string, state: AgentState): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(state, null, 1)}\n`, { mode: 0o600 });
  renameSync(tmp, path);
}
