/**
 * Body lanes (engine/blobs/body-lanes.ts): at most `lanes` bulk bodies read at once, first come
 * first served; small bodies never wait; no wait lasts past `maxWaitMs`; a lane is yielded after
 * `quantumBytes` or `maxHoldMs` while others wait; leaving gives the lane to the next. The race
 * test drives bodies with random sizes and pauses and checks the invariants at every step.
 */
import t from 'tap';
import { BodyLanes, type LaneTicket } from '../../engine/blobs/body-lanes.js';

/** A ticket whose wake-ups are counted and can be awaited. */
function body(lanes: BodyLanes): { ticket: LaneTicket; woken: () => number; nextWake: () => Promise<void> } {
  let wakes = 0;
  let waiters: Array<() => void> = [];
  const ticket = lanes.ticket(() => {
    wakes++;
    const w = waiters;
    waiters = [];
    for (const f of w) f();
  });
  return { ticket, woken: () => wakes, nextWake: () => new Promise((r) => waiters.push(r)) };
}

const KiB = 1024;
const MiB = 1024 * KiB;

t.test('at most `lanes` bulk bodies read; the rest wait in order and get the lanes given back', async (t) => {
  const lanes = new BodyLanes(2, { bulkBytes: 64 * KiB, maxWaitMs: 60_000, maxHoldMs: 60_000 });
  const [a, b, c, d] = [body(lanes), body(lanes), body(lanes), body(lanes)];
  t.ok(lanes.mayRead(a.ticket, 1000), 'a small body reads without a lane');
  t.equal(a.ticket.state, 'small');
  t.ok(lanes.mayRead(a.ticket, 64 * KiB), 'past the bulk size: a lane is free');
  t.ok(lanes.mayRead(b.ticket, 80 * KiB));
  t.notOk(lanes.mayRead(c.ticket, 70 * KiB), 'no lane left: the third waits');
  t.notOk(lanes.mayRead(d.ticket, 65 * KiB), 'and the fourth behind it');
  t.same([lanes.holding, lanes.waiting], [2, 2]);
  t.notOk(lanes.mayRead(c.ticket, 70 * KiB), 'asking again changes nothing');
  const cWoken = c.nextWake();
  lanes.leave(b.ticket);
  await cWoken;
  t.equal(c.ticket.state, 'holding', 'the oldest waiter gets the lane');
  t.equal(d.ticket.state, 'waiting');
  t.ok(lanes.mayRead(c.ticket, 71 * KiB));
  const dWoken = d.nextWake();
  lanes.leave(d.ticket);
  t.equal(lanes.waiting, 0, 'a waiter that leaves gives up its place');
  lanes.leave(a.ticket);
  lanes.leave(c.ticket);
  lanes.leave(c.ticket);
  t.same([lanes.holding, lanes.waiting], [0, 0], 'leaving twice is harmless');
  t.equal(d.woken(), 0, 'a body that left is not woken');
  void dWoken;
});

t.test('no lanes: every body reads', async (t) => {
  const lanes = new BodyLanes(0);
  const many = Array.from({ length: 10 }, () => body(lanes));
  for (const m of many) t.ok(lanes.mayRead(m.ticket, 100 * MiB));
  t.same([lanes.holding, lanes.waiting], [0, 0]);
  t.throws(() => new BodyLanes(-1), RangeError);
  t.throws(() => new BodyLanes(1.5), RangeError);
});

t.test('a wait ends after maxWaitMs: the body then reads without a lane', async (t) => {
  const lanes = new BodyLanes(1, { bulkBytes: 0, maxWaitMs: 40, maxHoldMs: 60_000 });
  const stuck = body(lanes);
  t.ok(lanes.mayRead(stuck.ticket, 1), 'the first body takes the lane and then sends nothing more');
  const late = body(lanes);
  const started = performance.now();
  t.notOk(lanes.mayRead(late.ticket, 1));
  await late.nextWake();
  const waited = performance.now() - started;
  t.equal(late.ticket.state, 'free');
  t.ok(lanes.mayRead(late.ticket, 10 * MiB), 'reads on without a lane');
  t.ok(waited >= 35 && waited < 2000, `woken after ${waited.toFixed(0)} ms (maxWaitMs 40)`);
  t.equal(lanes.waitsExpired, 1);
  t.equal(stuck.ticket.state, 'holding', 'the holder keeps its lane: nobody waits any more');
  lanes.leave(stuck.ticket);
  lanes.leave(late.ticket);
});

t.test('a lane is yielded after quantumBytes while others wait, and after maxHoldMs', async (t) => {
  const lanes = new BodyLanes(1, { bulkBytes: 0, quantumBytes: 8 * MiB, maxWaitMs: 60_000, maxHoldMs: 60_000 });
  const a = body(lanes);
  const b = body(lanes);
  t.ok(lanes.mayRead(a.ticket, 1));
  t.ok(lanes.mayRead(a.ticket, 20 * MiB), 'past the quantum with nobody waiting: keeps the lane');
  t.notOk(lanes.mayRead(b.ticket, 1));
  const bWoken = b.nextWake();
  t.notOk(lanes.mayRead(a.ticket, 20 * MiB + 1), 'someone waits: the lane goes to b, a waits behind it');
  await bWoken;
  t.same([a.ticket.state, b.ticket.state], ['waiting', 'holding']);
  const aWoken = a.nextWake();
  t.ok(lanes.mayRead(b.ticket, 8 * MiB - 1), 'b keeps it below its quantum');
  t.notOk(lanes.mayRead(b.ticket, 9 * MiB), 'b yields back at its quantum');
  await aWoken;
  t.equal(a.ticket.state, 'holding');
  lanes.leave(a.ticket);
  lanes.leave(b.ticket);

  const slow = new BodyLanes(1, { bulkBytes: 0, maxWaitMs: 60_000, maxHoldMs: 30 });
  const holder = body(slow);
  const next = body(slow);
  t.ok(slow.mayRead(holder.ticket, 1), 'a holder that stops sending');
  t.notOk(slow.mayRead(next.ticket, 1));
  await next.nextWake();
  t.same([holder.ticket.state, next.ticket.state], ['free', 'holding'], 'held past maxHoldMs: the lane goes to the waiter, the holder reads on without it');
  t.equal(slow.holdsExpired, 1);
  slow.leave(holder.ticket);
  slow.leave(next.ticket);
});

t.test('a late timer that finds a hold and a wait both expired gives the lane to the waiter', async (t) => {
  let clock = 0;
  const lanes = new BodyLanes(1, { bulkBytes: 0, maxWaitMs: 20, maxHoldMs: 40, now: () => clock });
  const holder = body(lanes);
  const waiter = body(lanes);
  t.ok(lanes.mayRead(holder.ticket, 1), 'the holder takes the lane at 0 ms and stops sending');
  clock = 30;
  t.notOk(lanes.mayRead(waiter.ticket, 1), 'a body comes at 30 ms and waits (its wait ends at 50, the hold at 40)');
  clock = 100; // the timer (due at 40) runs late, when both are past their limits
  await waiter.nextWake();
  t.same([holder.ticket.state, waiter.ticket.state], ['free', 'holding'], 'the freed lane goes to the waiter');
  t.same([lanes.holdsExpired, lanes.waitsExpired], [1, 0], 'one limit ended the wait: the hold');
  lanes.leave(holder.ticket);
  lanes.leave(waiter.ticket);
  t.same([lanes.holding, lanes.waiting], [0, 0]);
});

t.test('race: random bodies, sizes and pauses; lanes never exceeded, waits bounded, every body ends', async (t) => {
  const LANES = 3;
  const MAX_WAIT = 25;
  const lanes = new BodyLanes(LANES, { bulkBytes: 64 * KiB, quantumBytes: 2 * MiB, maxWaitMs: MAX_WAIT, maxHoldMs: 60 });
  let longestWait = 0;
  const violations: string[] = [];
  const check = () => {
    if (lanes.holding > LANES) violations.push(`${lanes.holding} holders`);
  };
  const run = async (i: number) => {
    const b = body(lanes);
    const size = Math.floor(Math.random() * 12 * MiB);
    let received = 0;
    while (received < size) {
      if (!lanes.mayRead(b.ticket, received)) {
        const since = performance.now();
        const woken = b.nextWake();
        await woken;
        longestWait = Math.max(longestWait, performance.now() - since);
        check();
        continue;
      }
      check();
      received = Math.min(size, received + Math.floor(Math.random() * 1.5 * MiB) + 1);
      if (Math.random() < 0.3) await new Promise((r) => setTimeout(r, Math.random() * 15));
      else await new Promise((r) => setImmediate(r));
    }
    lanes.leave(b.ticket);
    return i;
  };
  for (let round = 0; round < 5; round++) {
    const done = await Promise.all(Array.from({ length: 16 }, (_, i) => run(i)));
    t.equal(done.length, 16);
  }
  t.same(violations, [], 'never more holders than lanes');
  t.same([lanes.holding, lanes.waiting], [0, 0], 'every lane given back');
  // A wait ends at maxWaitMs by the timer, or earlier; the event loop may add a little.
  t.ok(longestWait < MAX_WAIT + 250, `longest wait ${longestWait.toFixed(0)} ms (maxWaitMs ${MAX_WAIT})`);
});
