// What the agent remembers between runs (one JSON file, --state, mode 0600): its daemon id and
// network, the key a server_poll agent was paired with, a run counter (which slice of the full port
// range this run adds), the open ports of each address (probed again next run, so a stopped service
// is noticed), how many hosts each target had, and, per address, when it was first found and the
// description sent then (reports stay byte-identical while nothing changes, so the server's digest
// makes an unchanged host cost nothing).
import { randomBytes } from 'node:crypto';
import { closeSync, fchmodSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
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

/** The state file's mode: it holds the agent's key. */
export const STATE_FILE_MODE = 0o600;
/** The mode of the directories saveState creates. */
export const STATE_DIR_MODE = 0o700;

/**
 * Written to a temporary file and renamed: a killed agent never leaves half a state file, and the
 * file is STATE_FILE_MODE whatever was there before (the rename replaces a 0644 file by the new
 * one) and whatever the umask. The temporary file is new (exclusive create, a random name: a stale
 * one, e.g. of an agent that was pid 1 in its container too, is never reused with its mode) and
 * chmodded before anything is written to it.
 */
export function saveState(path: string, state: AgentState): void {
  mkdirSync(dirname(path), { recursive: true, mode: STATE_DIR_MODE });
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const fd = openSync(tmp, 'wx', STATE_FILE_MODE);
  try {
    try {
      fchmodSync(fd, STATE_FILE_MODE);
      writeSync(fd, `${JSON.stringify(state, null, 1)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (err) {
    try { unlinkSync(tmp); } catch { /* already renamed or gone */ }
    throw err;
  }
}
