// The discovery agent in the lab (issue 24, "What it must show"): network namespaces in
// 198.18.0.0/15 built by test/lab/lab.ts, the agent in a namespace of its own whose only routes
// lead to the lab (asserted before every probe), and assertions on the server's inventory through
// the API. Root only: otherwise every test here is reported as pending, with the reason.
import { expect } from 'chai';
import { LAB_PACKAGES, ensurePackages } from './packages.js';
import { AGENT_IP, MIDDLEBOX_RANGE, PYTHON, WEB_TITLE, createLab, labUnavailable, type Lab, type ProbeTarget } from './lab.js';

/** Skips the whole file (pending, with the reason) where the lab cannot be built. */
function skipUnlessLab(ctx: Mocha.Context): void {
  const why = labUnavailable();
  if (why) {
    console.log(`      pending: ${why}`);
    ctx.skip();
  }
}

describe('discovery lab: namespaces, services and the safety check', function () {
  this.timeout(60_000);
  let lab: Lab;

  before(async function () {
    this.timeout(300_000); // the first run on a machine may install Debian packages
    skipUnlessLab(this);
    ensurePackages(LAB_PACKAGES);
    lab = await createLab();
  });
  after(async () => lab?.destroy());

  it('the agent namespace routes only into the lab: a default route or a route elsewhere fails the check', () => {
    lab.assertAgentIsolated();
    // Routes only, added and removed while nothing is sent: the check must refuse each.
    for (const extra of [['default', 'via', '198.18.10.1'], ['192.0.2.0/24', 'via', '198.18.10.1']]) {
      lab.exec(lab.agentNs, 'ip', ['route', 'add', ...extra]);
      try {
        expect(() => lab.assertAgentIsolated()).to.throw(/NETWORK SAFETY/);
      } finally {
        lab.exec(lab.agentNs, 'ip', ['route', 'del', ...extra]);
      }
    }
    lab.assertAgentIsolated();
  });

  it('every service answers from the agent namespace with what identifies it; the quiet hosts stay quiet', async () => {
    const targets: ProbeTarget[] = [
      { ip: '198.18.10.11', port: 80, send: 'GET / HTTP/1.0\r\n\r\n' },
      { ip: '198.18.10.12', port: 6379, send: 'PING\r\n' },
      { ip: '198.18.20.14', port: 2222 },
      { ip: '198.18.20.15', port: 5432, send: '\x00\x00\x00\x08\x04\xd2\x16\x2f' }, // SSLRequest
      { ip: '198.18.20.16', port: 22 },
      { ip: '198.18.10.16', port: 22 },
    ];
    const [web, redis, ssh, pg, quietB, quietA] = await lab.probeFromAgent(targets);
    expect(web!.banner).to.match(/^HTTP\/1\.0 200/).and.include(`<title>${WEB_TITLE}</title>`);
    expect(redis!.banner).to.equal('+PONG\r\n');
    expect(ssh!.banner).to.match(/^SSH-2\.0-OpenSSH_[\d.]+p\d+ Debian/);
    expect(pg!.banner).to.equal('N'); // no TLS: PostgreSQL's answer to an SSLRequest
    expect(quietB!.outcome, 'the routed host without a listener answers RST').to.equal('refused');
    expect(quietA!.outcome, 'the on-link host drops every IP packet').to.equal('silent');
    // ... but it answers ARP: the kernel's neighbour table has its MAC (the agent's unprivileged liveness).
    expect(lab.agentNeighbours()['198.18.10.16']).to.equal(lab.hosts.find((h) => h.name === 'quiet-a')!.mac.toUpperCase());
    // The routed segment is reached through the router: no MAC of a segment-B host is learnt.
    const neighbours = Object.keys(lab.agentNeighbours());
    expect(neighbours.filter((a) => a.startsWith('198.18.20.'))).to.deep.equal([]);
  });

  it('every address of the middlebox range answers TCP 5060 alike, and nothing else', async () => {
    const addresses = ['198.18.20.129', '198.18.20.170', '198.18.20.254'];
    expect(MIDDLEBOX_RANGE).to.equal('198.18.20.128/25');
    const results = await lab.probeFromAgent([...addresses.map((ip) => ({ ip, port: 5060 })), { ip: '198.18.20.170', port: 80 }]);
    expect(results.map((r) => r.outcome)).to.deep.equal(['open', 'open', 'open', 'silent']);
  });

  it('the 9100–9107 counters count what reaches the printer through a bridge and through the router', () => {
    // From lab hosts (not the agent): web on the same bridge, then ssh across the router.
    const connect = `import socket\ns=socket.create_connection(('198.18.10.13', 9100), 2); s.close()`;
    const start = lab.rawPortPacketsAt();
    lab.exec(lab.hosts.find((h) => h.name === 'web')!.ns, PYTHON, ['-c', connect]);
    const bridged = lab.rawPortPacketsAt();
    expect(bridged.bridges, 'bridge counter').to.be.greaterThan(start.bridges);
    expect(bridged.router, 'the router saw nothing').to.equal(start.router);
    lab.exec(lab.hosts.find((h) => h.name === 'ssh')!.ns, PYTHON, ['-c', connect]);
    const routed = lab.rawPortPacketsAt();
    expect(routed.router, 'router counter').to.be.greaterThan(bridged.router);
    expect(routed.bridges, 'both bridges').to.be.greaterThan(bridged.bridges);
    expect(routed.agent, 'nothing from the agent').to.equal(start.agent);
  });

  it('the agent namespace counts its lab traffic and has its own address on segment A only', async () => {
    const before = lab.agentTraffic();
    await lab.probeFromAgent([{ ip: '198.18.10.12', port: 6379, send: 'PING\r\n' }]);
    const after = lab.agentTraffic();
    expect(after.packetsOut).to.be.greaterThan(before.packetsOut);
    expect(after.packetsIn).to.be.greaterThan(before.packetsIn);
    const addrs = JSON.parse(lab.exec(lab.agentNs, 'ip', ['-4', '-j', 'addr'])) as Array<{ ifname: string; addr_info: Array<{ local: string }> }>;
    expect(addrs.flatMap((a) => a.addr_info.map((i) => `${a.ifname} ${i.local}`)).sort())
      .to.deep.equal([`ag-srv ${lab.agentServerIp}`, `ag0 ${AGENT_IP}`, 'lo 127.0.0.1']);
  });
});
