// The agent's install recipes as text, for one build and one server: what the Daemons page shows,
// what docs/agent.md prints, and what the tests run (test/web/agentInstall.spec.ts runs the commands
// in a lab namespace, and `systemd-analyze verify` checks the unit). Pure functions, no DOM.
//
// The key never goes on a command line (it would show in `ps` and in shell history of every
// process): it is written once into a file only its owner reads, and the agent reads --key-file.

/** One build of the agent as GET /api/v1/downloads lists it. */
export interface DownloadRef {
  file: string;
  kind: 'executable' | 'javascript' | string;
  sha256: string;
  url: string;
}

export interface InstallInput {
  download: DownloadRef;
  /** Where the agent reaches the server (PUBLIC_URL, or the page's origin). */
  serverUrl: string;
  /** The daemon key just created; a placeholder otherwise. */
  key?: string;
}

export const KEY_PLACEHOLDER = '<daemon key>';
/** The name the downloaded file is saved as, whatever the architecture, so the other commands do not change. */
export const installedName = (d: DownloadRef) => (d.kind === 'javascript' ? 'netinventory-agent.cjs' : 'netinventory-agent');
const runner = (d: DownloadRef, path: string) => (d.kind === 'javascript' ? `node ${path}` : path);
const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/** Download into the current directory and check the file against the sum this page shows. */
export function downloadCommands(i: InstallInput): string {
  const name = installedName(i.download);
  return [
    `curl -fsSL -o ${name} ${i.download.url}`,
    `echo '${i.download.sha256}  ${name}' | sha256sum -c -`,
    i.download.kind === 'javascript' ? null : `chmod +x ${name}`,
  ].filter(Boolean).join('\n');
}

/** The key into ./agent.key, readable by its owner only. */
export const keyFileCommand = (i: InstallInput) => `(umask 077; printf '%s\\n' ${shellQuote(i.key ?? KEY_PLACEHOLDER)} > agent.key)`;

/** Runs the agent in the foreground from the download directory (Ctrl+C stops it). */
export const runCommand = (i: InstallInput) => `${runner(i.download, `./${installedName(i.download)}`)} --server ${i.serverUrl} --key-file agent.key`;

export const UNIT_NAME = 'netinventory-agent.service';
export const UNIT_BINARY = '/usr/local/bin/netinventory-agent';

/**
 * A systemd unit: no root, no capability, the key as a systemd credential (read by the service
 * only, from /etc/netinventory-agent/agent.key), its state in /var/lib/netinventory-agent.
 */
export function systemdUnit(i: InstallInput, binary = i.download.kind === 'javascript' ? '/usr/local/lib/netinventory-agent.cjs' : UNIT_BINARY): string {
  return `[Unit]
Description=NetInventory discovery agent
After=network-online.target
Wants=network-online.target

[Service]
ExecStart=${runner(i.download, binary).replace(/^node /, '/usr/bin/node ')} --server ${i.serverUrl} --key-file %d/agent-key --state /var/lib/netinventory-agent/state.json
LoadCredential=agent-key:/etc/netinventory-agent/agent.key
DynamicUser=yes
StateDirectory=netinventory-agent
CapabilityBoundingSet=
NoNewPrivileges=yes
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
Restart=on-failure
RestartSec=30

[Install]
WantedBy=multi-user.target
`;
}

/** From the download directory (after the commands above): the file, the key and the unit in place, then started. */
export function systemdCommands(i: InstallInput): string {
  const name = installedName(i.download);
  const target = i.download.kind === 'javascript' ? '/usr/local/lib/netinventory-agent.cjs' : UNIT_BINARY;
  return [
    `sudo install -m 755 ${name} ${target}`,
    'sudo install -D -m 600 agent.key /etc/netinventory-agent/agent.key',
    `sudo tee /etc/systemd/system/${UNIT_NAME} > /dev/null <<'UNIT'`,
    systemdUnit(i).trimEnd(),
    'UNIT',
    `sudo systemctl daemon-reload && sudo systemctl enable --now ${UNIT_NAME}`,
    `journalctl -u ${UNIT_NAME} -f`,
  ].join('\n');
}

/** A container recipe (not run by the tests: no container engine here); host networking for the neighbour table. */
export function containerRecipe(i: InstallInput): string {
  const name = installedName(i.download);
  const javascript = i.download.kind === 'javascript';
  return `cat > Dockerfile <<'FILE'
FROM ${javascript ? 'node:22-slim' : 'debian:12-slim'}
COPY ${name} /usr/local/bin/${name}
ENV AGENT_STATE=/state/state.json
VOLUME /state
ENTRYPOINT [${javascript ? `"node", "/usr/local/bin/${name}"` : `"/usr/local/bin/${name}"`}, "--key-file", "/run/secrets/agent.key"]
FILE
docker build -t netinventory-agent .
mkdir -p state
docker run -d --name netinventory-agent --restart unless-stopped --network host --user "$(id -u):$(id -g)" \\
  -v "$PWD/state:/state" -v "$PWD/agent.key:/run/secrets/agent.key:ro" \\
  netinventory-agent --server ${i.serverUrl}`;
}
