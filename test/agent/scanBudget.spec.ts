// The global budget with an injected clock: no wall-clock assertion.
import { expect } from 'chai';
import { ProbeBudget, RoundTrips, Semaphore, TokenBucket, type Clock } from '../../agent/scan/budget.js';

/** A clock that moves only when someone sleeps on it. */
function fakeClock(): Clock & { t: number; sleeps: number[] } {
  const clock = {
    t: 0,
    sleeps: [] as number[],
    now: () => clock.t,
    sleep: async (ms: number) => {
      clock.sleeps.push(ms);
      clock.t += ms;
    },
  };
  return clock;
}

describe('agent scan: budget', () => {
  it('token bucket: a burst, then exactly `rate` tokens per second', () => {
    const clock = fakeClock();
    const bucket = new TokenBucket(200, 10, clock);
    for (let i = 0; i < 10; i++) expect(bucket.tryTake()).to.equal(0);
    expect(bucket.tryTake()).to.equal(5); // one token every 5 ms at 200/s
    clock.t += 4;
    expect(bucket.tryTake()).to.equal(1);
    clock.t += 1;
    expect(bucket.tryTake()).to.equal(0);
    clock.t += 10_000; // a long pause refills to the burst, not more
    let taken = 0;
    while (bucket.tryTake() === 0) taken++;
    expect(taken).to.equal(10);
  });

  it('token bucket: take() waits on the clock; 1,000 probes at 200/s take 4.95 s of clock time', async () => {
    const clock = fakeClock();
    const bucket = new TokenBucket(200, 10, clock);
    for (let i = 0; i < 1000; i++) await bucket.take();
    expect(clock.t).to.be.closeTo(((1000 - 10) / 200) * 1000, 1);
  });

  it('the budget is shared: probes of many hosts together stay within the one rate', async () => {
    const clock = fakeClock();
    const budget = new ProbeBudget({ probesPerSecond: 100, maxOpenSockets: 1000 }, clock);
    const hosts = Array.from({ length: 20 }, (_, h) => h);
    await Promise.all(hosts.flatMap(() => Array.from({ length: 10 }, () => budget.probe(async () => undefined))));
    expect(budget.probesSent).to.equal(200);
    expect(clock.t).to.be.at.least(((200 - 5) / 100) * 1000 - 1); // 100/s overall, not 100/s per host
  });

  it('semaphore: never more holders than its size; aborted waiters leave the queue', async () => {
    const sem = new Semaphore(2);
    const r1 = await sem.acquire();
    await sem.acquire();
    const ac = new AbortController();
    const waiting = sem.acquire(ac.signal);
    const third = sem.acquire();
    ac.abort();
    await waiting.then(() => expect.fail('acquired after abort'), () => undefined);
    expect(sem.inUse).to.equal(2);
    r1();
    r1(); // releasing twice frees one place only
    await third;
    expect(sem.inUse).to.equal(2);
  });

  it('the budget holds at most maxOpenSockets probes at once', async () => {
    const budget = new ProbeBudget({ probesPerSecond: 1e6, maxOpenSockets: 3 }, fakeClock());
    let open = 0;
    let most = 0;
    await Promise.all(Array.from({ length: 20 }, () => budget.probe(async () => {
      most = Math.max(most, ++open);
      await new Promise((r) => setImmediate(r));
      open--;
    })));
    expect(most).to.equal(3);
  });

  it('connect timeout: 800 ms at first, then 4 x smoothed RTT within 150-1500 ms', () => {
    const rtt = new RoundTrips();
    expect(rtt.connectTimeoutMs()).to.equal(800);
    rtt.observe(100);
    expect(rtt.connectTimeoutMs()).to.equal(400);
    rtt.observe(20); // smoothed: 100 + (20 - 100) / 8 = 90
    expect(rtt.connectTimeoutMs()).to.equal(360);
    const fast = new RoundTrips();
    fast.observe(0.1);
    expect(fast.connectTimeoutMs()).to.equal(150);
    const slow = new RoundTrips();
    slow.observe(2000);
    expect(slow.connectTimeoutMs()).to.equal(1500);
  });
});
