// The agent's builds that the server hands out (GET /downloads/…): declared once here, made by
// scripts/build.ts (buildAgentArtifacts) into dist/downloads/, served by ./routes.ts, named by the
// web app's install block and by docs/agent.md.
import { fileURLToPath } from 'node:url';

export interface AgentArtifact {
  /** The file name under dist/downloads/ and /downloads/. */
  file: string;
  kind: 'javascript' | 'executable';
  /** What the machine that runs it needs. */
  runs: string;
  /** node: process.platform / process.arch of the machine it runs on (null: any that has Node). */
  platform: 'linux' | null;
  arch: 'x64' | 'arm64' | null;
}

export const AGENT_ARTIFACTS: readonly AgentArtifact[] = [
  { file: 'netinventory-agent-linux-x64', kind: 'executable', runs: 'Linux on x86-64, nothing installed', platform: 'linux', arch: 'x64' },
  { file: 'netinventory-agent-linux-arm64', kind: 'executable', runs: 'Linux on ARM64 (Raspberry Pi 4/5, Graviton), nothing installed', platform: 'linux', arch: 'arm64' },
  { file: 'netinventory-agent.cjs', kind: 'javascript', runs: 'any machine with Node.js 18 or later (node netinventory-agent.cjs)', platform: null, arch: null },
];

/** dist/downloads/, from the sources (tsx) or from the bundle in dist/ that the server runs. */
export const DOWNLOADS_DIR = fileURLToPath(import.meta.url.endsWith('.ts') ? new URL('../../../dist/downloads/', import.meta.url) : new URL('./downloads/', import.meta.url));

/** dist/downloads/manifest.json, written by the build beside the files. */
export interface DownloadsManifest {
  /** The agent's version (agent/config.ts AGENT_VERSION). */
  agent_version: string;
  /** package.json's version when built: the server hands out only builds of its own version. */
  server_version: string;
  files: Array<{ file: string; kind: AgentArtifact['kind']; size: number; sha256: string }>;
}
