// How to start a discovery agent on another machine: the install block of the Daemons page (the
// download of this server's own build, checked by its SHA-256; the key into a file; the run command
// with the address agents reach this server at; a systemd unit; a container recipe), and the short
// steps shown where an operator first meets an empty inventory (the empty map and hosts list).
// The recipes' text is ./agentInstall.ts; this module only draws them.
import { api, ApiError } from './api.js';
import { fill, h, notice } from './dom.js';
import type { AgentDownloads } from './apiTypes.js';
import { containerRecipe, downloadCommands, keyFileCommand, runCommand, systemdCommands, type InstallInput } from './agentInstall.js';

type Child = Parameters<typeof h>[2];

/** A command in a dark box with its own Copy button. */
function commandBox(id: string, text: string) {
  const copy = h('button', {
    type: 'button', class: 'copy', 'aria-label': `Copy: ${id.replace(/-/g, ' ')}`,
    onclick: async () => { await navigator.clipboard?.writeText(text).catch(() => undefined); copy.textContent = 'Copied'; },
  }, 'Copy');
  return h('div', { class: 'command-box' }, h('pre', { class: 'command' }, h('code', { id }, text)), copy);
}

const MACHINE_TEXT: Record<string, string> = {
  'netinventory-agent-linux-x64': 'Linux, x86-64',
  'netinventory-agent-linux-arm64': 'Linux, ARM64',
  'netinventory-agent.cjs': 'Any machine with Node.js 18+',
};

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/** The commands for one build. */
function recipes(i: InstallInput, size: number) {
  return [
    h('ol', { class: 'agent-steps install-steps' },
      h('li', {}, `Download it (${mib(size)}) and check its SHA-256:`, commandBox('agent-download', downloadCommands(i))),
      h('li', {}, i.key ? 'Keep the key in a file only you can read (it is shown only now):' : 'Keep the daemon key in a file only you can read:',
        commandBox('agent-key-file', keyFileCommand(i))),
      h('li', {}, 'Start it. It registers, lists the subnets it is on, and appears below; it scans nothing until you approve one:',
        commandBox('agent-run', runCommand(i)))),
    h('details', { class: 'recipe' }, h('summary', {}, 'As a systemd service'),
      h('p', { class: 'muted' }, 'From the same directory, after the download and the key file: no root for the agent, no capability, the key as a systemd credential.'),
      commandBox('agent-systemd', systemdCommands(i))),
    h('details', { class: 'recipe' }, h('summary', {}, 'In a container'),
      h('p', { class: 'muted' }, 'Host networking, so it sees the neighbour table and the host’s interfaces. Not tested by the project (no container engine on its test machines).'),
      commandBox('agent-container', containerRecipe(i))),
  ];
}

/**
 * The install block: `key`, the daemon key just created (else a placeholder). Reads
 * GET /api/v1/downloads for this server's builds and the address agents should use.
 */
export function installBlock(o: { key?: string } = {}): HTMLElement {
  const body = h('div', {}, h('p', { class: 'muted' }, 'Loading the agent’s downloads…'));
  const block = h('section', { class: 'install-block', 'aria-label': 'Install the agent' }, h('h2', {}, 'Install the agent on a machine inside the network'), body);
  void api.get<AgentDownloads>('/api/v1/downloads').then((d) => {
    if (!d.files.length) return fill(body, notice('error', 'This server has no build of the agent to hand out: run npm run build on the server.'));
    const machine = h('select', { id: 'agent-machine' }, d.files.map((f) => h('option', { value: f.file }, MACHINE_TEXT[f.file] ?? f.file)));
    const steps = h('div', {});
    const show = () => {
      const f = d.files.find((x) => x.file === machine.value) ?? d.files[0]!;
      fill(steps, recipes({ download: f, serverUrl: d.server_url, key: o.key }, f.size));
    };
    machine.addEventListener('change', show);
    show();
    fill(body,
      d.server_url_is_loopback
        ? h('p', { class: 'notice warning', role: 'alert', id: 'agent-loopback-warning' },
          h('strong', {}, `${d.server_url} is this server’s own loopback address:`),
          ' an agent on another machine cannot reach it. Open this page by the address the network knows the server by, or start the server with PUBLIC_URL=https://… set.')
        : null,
      h('p', { class: 'install-meta' }, h('label', { for: 'agent-machine' }, 'Machine'), machine,
        h('span', { class: 'muted' }, `agent ${d.agent_version}, server ${d.server_url}`)),
      steps);
  }, (err: unknown) => {
    const e = err instanceof ApiError ? err : new ApiError(0, 'request_failed', (err as Error).message);
    fill(body, notice('error', e.message, e.code));
  });
  return block;
}

/**
 * The short steps where the inventory is empty. `keyStep`: how to get a key where the steps are
 * shown (the Daemons page has its own form); by default, a link to that page (`onDaemonsLink` opens it in place).
 */
export function agentSteps(_networkId?: string, o: { onDaemonsLink?: (e: MouseEvent) => void; keyStep?: Child } = {}): HTMLElement {
  const daemons = () => h('a', { href: '/daemons', onclick: o.onDaemonsLink }, 'Daemons page');
  return h('ol', { class: 'agent-steps' },
    h('li', {}, o.keyStep ?? ['Create a daemon key on the ', daemons(), ' (or POST /api/v1/auth/daemon).']),
    h('li', {}, 'Install the agent on a machine inside the network to scan: one file, downloaded from this server (the ', daemons(), ' shows the commands; Linux needs nothing else installed).'),
    h('li', {}, 'Approve a subnet it suggests on the Daemons page, then Scan now. It probes nothing else.'));
}
