// The recorded exchanges between real Scanopy daemons and a server (test/fixtures/scanopy-daemon/
// v*/daemon_to_server.json and server_to_daemon.json), kept in the repository so a clone runs its
// own tests. SCANOPY_FIXTURES_DIR points elsewhere (e.g. a newer recording) without a code change.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const SCANOPY_FIXTURES_DIR = process.env.SCANOPY_FIXTURES_DIR
  || fileURLToPath(new URL('../fixtures/scanopy-daemon/', import.meta.url));

/** One recorded file, parsed: `readRecording('v0.14.10', 'daemon_to_server.json')`. */
export function readRecording<T = { exchanges: any[] }>(version: string, file: 'daemon_to_server.json' | 'server_to_daemon.json'): T {
  return JSON.parse(readFileSync(join(SCANOPY_FIXTURES_DIR, version, file), 'utf8')) as T;
}
