// The agent's HTTP client (daemon-protocol.md §0): its headers, strict envelope parsing (an error
// body without meta has no code, as for a real daemon) and upstream's retry rules. A fake fetch
// stands in for the server.
import { expect } from 'chai';
import { AGENT_VERSION } from '../../agent/config.js';
import { parseEnvelope, ServerClient, ServerError } from '../../agent/protocol/client.js';

const META = { api_version: 1, server_version: '0.14.13' };
const DAEMON = '0b9a8c7d-6e5f-4a3b-9c1d-2e3f4a5b6c7d';
type Answer = { status: number; body: unknown } | Error;

function fakeFetch(answers: Answer[]) {
  const seen: Array<{ url: string; headers: Record<string, string>; body?: unknown }> = [];
  const fn = (async (url: string, init: RequestInit) => {
    seen.push({ url, headers: init.headers as Record<string, string>, body: init.body ? JSON.parse(String(init.body)) : undefined });
    const answer = answers.shift() ?? new Error('no more answers');
    if (answer instanceof Error) throw answer;
    return new Response(typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body), { status: answer.status });
  }) as unknown as typeof fetch;
  return { fn, seen };
}

const client = (answers: Answer[]) => {
  const f = fakeFetch(answers);
  return { c: new ServerClient({ server: 'http://server.test/', key: 'scp_d_k', daemonId: DAEMON, fetch: f.fn, backoffScale: 0 }), seen: f.seen };
};

async function failure(p: Promise<unknown>): Promise<ServerError> {
  try {
    await p;
  } catch (err) {
    expect(err).to.be.instanceOf(ServerError);
    return err as ServerError;
  }
  throw new Error('expected a failure');
}

describe('agent: the server client', () => {
  it('sends Bearer key, X-Daemon-ID and X-Daemon-Version on every call', async () => {
    const { c, seen } = client([{ status: 200, body: { success: true, data: [null, false], meta: META } }]);
    expect(await c.requestWork({ name: 'a', mode: 'daemon_poll', version: AGENT_VERSION })).to.deep.equal([null, false]);
    expect(seen[0]!.url).to.equal(`http://server.test/api/daemons/${DAEMON}/request-work`);
    expect(seen[0]!.headers).to.include({ Authorization: 'Bearer scp_d_k', 'X-Daemon-ID': DAEMON, 'X-Daemon-Version': AGENT_VERSION, 'Content-Type': 'application/json' });
  });

  it('parses envelopes strictly: meta with an integer api_version and a semver server_version, in errors too', async () => {
    expect(parseEnvelope({ success: true, data: 1, meta: META })).to.not.equal(null);
    expect(parseEnvelope({ success: true, data: 1 })).to.equal(null);
    expect(parseEnvelope({ success: true, data: 1, meta: { api_version: '1', server_version: '0.14.13' } })).to.equal(null);
    expect(parseEnvelope({ success: true, data: 1, meta: { api_version: 1, server_version: 'latest' } })).to.equal(null);
    expect(parseEnvelope({ success: false, error: 'x', meta: { api_version: 1, server_version: '0.14.13+build.1' } })).to.not.equal(null);

    const coded = await failure(client([{ status: 404, body: { success: false, error: "Daemon with ID 'x' not found", code: 'entity_not_found', meta: META } }]).c.startup());
    expect(coded).to.include({ status: 404, code: 'entity_not_found' });
    // Without meta the code is lost (upstream: the daemon then only sees "HTTP 404").
    const bare = await failure(client([{ status: 404, body: { success: false, error: 'not found', code: 'entity_not_found' } }]).c.startup());
    expect(bare).to.include({ status: 404, code: null });
    expect(bare.message).to.match(/HTTP 404$/);
    const plain = await failure(client([{ status: 502, body: 'Bad Gateway' }]).c.startup());
    expect(plain).to.include({ status: 502, code: null });
    const noData = await failure(client([{ status: 200, body: { success: true, meta: META } }]).c.startup());
    expect(noData.message).to.match(/No data in response/);
    const notSuccess = await failure(client([{ status: 200, body: { success: false, error: 'nope', meta: META } }]).c.startup());
    expect(notSuccess.message).to.match(/nope/);
  });

  it('retries as upstream: register while the key is being created, request-work on network errors, entity posts on 5xx; never a refusal', async () => {
    const notYet = { status: 401, body: { success: false, error: 'not yet', code: 'auth_daemon_key_not_created', meta: META } };
    const registered = { status: 200, body: { success: true, data: { daemon: {}, host_id: 'h' }, meta: META } };
    const reg = client([notYet, notYet, registered]);
    expect(await reg.c.register({} as any)).to.deep.equal({ daemon: {}, host_id: 'h' });
    expect(reg.seen).to.have.length(3);
    const refused = client([{ status: 403, body: { success: false, error: 'no', code: 'auth_demo_mode', meta: META } }, registered]);
    expect(await failure(refused.c.register({} as any))).to.include({ code: 'auth_demo_mode' });
    expect(refused.seen).to.have.length(1);

    const work = client([new Error('ECONNREFUSED'), new Error('EHOSTUNREACH'), { status: 200, body: { success: true, data: [null, true], meta: META } }]);
    expect(await work.c.requestWork({ name: 'a', mode: 'daemon_poll', version: AGENT_VERSION })).to.deep.equal([null, true]);
    expect(work.seen).to.have.length(3);
    const gone = client([{ status: 404, body: { success: false, error: 'gone', code: 'entity_not_found', meta: META } }]);
    expect(await failure(gone.c.requestWork({ name: 'a', mode: 'daemon_poll', version: AGENT_VERSION }))).to.include({ code: 'entity_not_found' });
    expect(gone.seen).to.have.length(1);

    const flaky = client([{ status: 503, body: 'busy' }, { status: 200, body: { success: true, data: { id: 's' }, meta: META } }]);
    expect(await flaky.c.postEntity('/api/v1/subnets', {})).to.deep.equal({ id: 's' });
    const invalid = client([{ status: 400, body: { success: false, error: 'bad', meta: META } }]);
    await failure(invalid.c.postEntity('/api/v1/subnets', {}));
    expect(invalid.seen).to.have.length(1);
    // The server limits each daemon key: a 429 waits its Retry-After and tries again.
    const limited = client([{ status: 429, body: { success: false, error: 'slow down', code: 'rate_limited', meta: META } }, { status: 200, body: { success: true, data: { id: 'h' }, meta: META } }]);
    expect(await limited.c.postEntity('/api/v1/hosts/discovery', {})).to.deep.equal({ id: 'h' });
    expect(limited.seen).to.have.length(2);
    // A terminal update is retried; a progress update is not (as upstream, its loss is harmless).
    const payload = (phase: string) => ({ session_id: 's', phase }) as any;
    const terminal = client([new Error('ECONNRESET'), { status: 200, body: { success: true, data: null, meta: META } }]);
    expect(await terminal.c.update(payload('Complete'))).to.equal(null);
    const progress = client([new Error('ECONNREFUSED'), { status: 200, body: { success: true, data: null, meta: META } }]);
    await failure(progress.c.update(payload('Scanning')));
    expect(progress.seen).to.have.length(1);
    // A kept-alive connection the server had just closed: any call is sent again at once (fetch's cause UND_ERR_SOCKET).
    const closed = Object.assign(new Error('fetch failed'), { cause: { code: 'UND_ERR_SOCKET' } });
    const reused = client([closed, { status: 200, body: { success: true, data: null, meta: META } }]);
    expect(await reused.c.update(payload('Scanning'))).to.equal(null);
    expect(reused.seen).to.have.length(2);
    // Five tries at most (§1.1 step 4).
    const down = client(Array.from({ length: 10 }, () => new Error('ECONNREFUSED')));
    await failure(down.c.postEntity('/api/v1/hosts/discovery', {}));
    expect(down.seen).to.have.length(5);
  });
});
