// How to start a discovery agent, said where an operator first meets an empty inventory (the
// Daemons page with no daemon, the empty map, the empty hosts list): the three steps with the
// command, this server's own origin in it, so it can be copied as it is.
import { h } from './dom.js';

type Child = Parameters<typeof h>[2];

/**
 * The agent's command line, one option a line (a shell continues it; a narrow screen wraps it
 * between options, not inside one). `key` and `network` are placeholders until a key exists.
 */
export function agentCommand(key = '<key>', network = '<network id>'): string {
  return `npm run agent -- \\\n  --server ${location.origin} \\\n  --key ${key} \\\n  --network ${network}`;
}

/**
 * The steps, as a short ordered list. `keyStep`: how to get a key where the steps are shown (the
 * Daemons page has its own form); by default, a link to that page (`onDaemonsLink` opens it in place).
 */
export function agentSteps(networkId?: string, o: { onDaemonsLink?: (e: MouseEvent) => void; keyStep?: Child } = {}): HTMLElement {
  const daemons = h('a', { href: '/daemons', onclick: o.onDaemonsLink }, 'Daemons page');
  return h('ol', { class: 'agent-steps' },
    h('li', {}, o.keyStep ?? ['Create a daemon key on the ', daemons, ' (or POST /api/v1/auth/daemon).']),
    h('li', {}, 'On a machine with Node 22 inside the network to scan, start the agent:',
      h('pre', { class: 'command' }, h('code', {}, agentCommand('<key>', networkId))),
      h('span', { class: 'muted' }, 'or, with the single file copied there: node dist/agent.js and the same options.')),
    h('li', {}, 'Approve a subnet it suggests on the Daemons page, then Scan now. It probes nothing else.'));
}
