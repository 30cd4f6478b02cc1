import { expect } from 'chai';
import { RATE_POLICIES, rateLimitHeaders, takeToken, type BucketPolicy, type BucketState } from '../../src/core/tokenBucket.js';

const T0 = 1_700_000_000_000;

/** Take n tokens at a fixed instant; returns the decisions and the final state. */
function drain(policy: BucketPolicy, n: number, now = T0, start?: BucketState) {
  let state = start;
  const decisions = [];
  for (let i = 0; i < n; i++) {
    const r = takeToken(state, now, policy);
    decisions.push(r.decision);
    state = r.state;
  }
  return { decisions, state: state! };
}

describe('core/tokenBucket', () => {
  for (const [name, policy] of Object.entries(RATE_POLICIES)) {
    it(`${name}: a full bucket allows exactly capacity (${policy.capacity}) immediate takes, then denies`, () => {
      const { decisions } = drain(policy, policy.capacity + 3);
      const allowed = decisions.filter((d) => d.allowed).length;
      expect(allowed).to.equal(policy.capacity);
      expect(decisions.slice(0, policy.capacity).every((d) => d.allowed)).to.equal(true);
      expect(decisions.slice(policy.capacity).every((d) => !d.allowed)).to.equal(true);
      expect(decisions[0]).to.include({ remaining: policy.capacity - 1, limit: policy.refillPerMinute });
      expect(decisions[policy.capacity - 1].remaining).to.equal(0);
    });
  }

  it('policies match product decisions §4', () => {
    expect(RATE_POLICIES.user).to.deep.equal({ capacity: 150, refillPerMinute: 300 });
    expect(RATE_POLICIES.anonymous).to.deep.equal({ capacity: 10, refillPerMinute: 40 });
    expect(RATE_POLICIES.daemon).to.deep.equal({ capacity: 300, refillPerMinute: 600 });
  });

  it('user: after 1 s an empty bucket yields exactly 5 more (one per 200 ms)', () => {
    const { state } = drain(RATE_POLICIES.user, 150);
    expect(state.tokens).to.equal(0);
    const later = drain(RATE_POLICIES.user, 10, T0 + 1000, state);
    expect(later.decisions.filter((d) => d.allowed).length).to.equal(5);
    // and 199 ms is not yet a token, 200 ms is
    expect(takeToken(state, T0 + 199, RATE_POLICIES.user).decision.allowed).to.equal(false);
    expect(takeToken(state, T0 + 200, RATE_POLICIES.user).decision.allowed).to.equal(true);
  });

  it('refill is exact over many odd-sized steps (no float drift)', () => {
    // 60 000 ms in steps of 7/13/33 ms must add exactly 300 tokens (capped at 150).
    let { state } = drain(RATE_POLICIES.user, 150);
    let now = T0;
    const steps = [7, 13, 33];
    let allowed = 0;
    for (let i = 0; now < T0 + 30_000; i++) {
      now = Math.min(T0 + 30_000, now + steps[i % 3]);
      const r = takeToken(state, now, RATE_POLICIES.user);
      state = r.state;
      if (r.decision.allowed) allowed++;
    }
    expect(allowed).to.equal(150); // 30 s * 5/s, every token granted as soon as due
  });

  it('a denied request leaves the tokens unchanged', () => {
    const { state } = drain(RATE_POLICIES.anonymous, 10);
    const half = takeToken(state, T0 + 750, RATE_POLICIES.anonymous); // 40/min → 0.5 token after 750 ms
    expect(half.decision.allowed).to.equal(false);
    expect(half.state.tokens).to.equal(0.5);
    const again = takeToken(half.state, T0 + 750, RATE_POLICIES.anonymous);
    expect(again.decision.allowed).to.equal(false);
    expect(again.state).to.deep.equal(half.state);
  });

  it('a missing state is a full bucket; tokens never exceed capacity', () => {
    const r = takeToken(undefined, T0, RATE_POLICIES.daemon);
    expect(r.state.tokens).to.equal(299);
    const idle = takeToken(r.state, T0 + 3_600_000, RATE_POLICIES.daemon);
    expect(idle.decision.remaining).to.equal(299);
    expect(idle.state.tokens).to.equal(299);
  });

  it('remaining / reset / retryAfter at the edges', () => {
    const user = RATE_POLICIES.user;
    // one take from full: 1 token missing → 200 ms to full → reset rounds up to 1 s
    const first = takeToken(undefined, T0, user).decision;
    expect(first).to.deep.equal({ allowed: true, remaining: 149, resetSeconds: 1, retryAfterSeconds: 0, limit: 300 });
    // empty: 150 tokens missing at 5/s → exactly 30 s
    const { decisions, state } = drain(user, 151);
    expect(decisions[149]).to.include({ allowed: true, remaining: 0, resetSeconds: 30 });
    // denied with 0 tokens: 200 ms to the next token → Retry-After rounds up to 1 (never 0)
    expect(decisions[150]).to.deep.equal({ allowed: false, remaining: 0, resetSeconds: 30, retryAfterSeconds: 1, limit: 300 });
    // 199 ms later: 0.995 token, still denied; retry still at least 1
    expect(takeToken(state, T0 + 199, user).decision).to.include({ allowed: false, retryAfterSeconds: 1, resetSeconds: 30 });
    // remaining counts whole tokens: 1.5 tokens → take leaves 0.5 → remaining 0
    const d = takeToken(state, T0 + 300, user).decision;
    expect(d).to.include({ allowed: true, remaining: 0 });
    // reset rounds up: 149.5 missing → 29.9 s → 30
    expect(d.resetSeconds).to.equal(30);

    // anonymous: 40/min = one token per 1.5 s → empty bucket says Retry-After 2, reset 15
    const anon = drain(RATE_POLICIES.anonymous, 11).decisions[10];
    expect(anon).to.deep.equal({ allowed: false, remaining: 0, resetSeconds: 15, retryAfterSeconds: 2, limit: 40 });
    // daemon: 600/min = one per 100 ms; empty → reset 30 s, retry 1
    const daemon = drain(RATE_POLICIES.daemon, 301).decisions[300];
    expect(daemon).to.deep.equal({ allowed: false, remaining: 0, resetSeconds: 30, retryAfterSeconds: 1, limit: 600 });
  });

  it('rateLimitHeaders: Retry-After only when denied', () => {
    expect(rateLimitHeaders({ allowed: true, remaining: 149, resetSeconds: 1, retryAfterSeconds: 0, limit: 300 })).to.deep.equal({
      'X-RateLimit-Limit': '300',
      'X-RateLimit-Remaining': '149',
      'X-RateLimit-Reset': '1',
    });
    expect(rateLimitHeaders({ allowed: false, remaining: 0, resetSeconds: 15, retryAfterSeconds: 2, limit: 40 })).to.deep.equal({
      'X-RateLimit-Limit': '40',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': '15',
      'Retry-After': '2',
    });
  });
});
