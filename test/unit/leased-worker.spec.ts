import { describe, expect, it, vi } from 'vitest';
import { loopWith } from './support/leased-loop.js';

function worker(
  claim: (limit: number) => Promise<string[]>,
  execute: (item: string) => Promise<void> = async () => undefined,
  pollInterval = 40,
) {
  const errors: unknown[] = [];
  const loop = loopWith({
    pollInterval,
    claim: (_lease, _now, limit) => claim(limit),
    execute,
    onError: (error) => errors.push(error),
  });
  return { loop, errors };
}

describe('the leased loop', () => {
  it('retries a failing claim at the poll interval, not in a tight loop', async () => {
    let claims = 0;
    const { loop, errors } = worker(async () => {
      claims++;
      throw new Error('database down');
    });
    loop.start();
    await new Promise((resolve) => setTimeout(resolve, 200));
    await loop.shutdown();
    expect(claims).toBeGreaterThanOrEqual(2);
    expect(claims).toBeLessThanOrEqual(7);
    expect(errors.length).toBe(claims);
  });

  it('claims again at once after a full claim, and never runs more than its slots', async () => {
    const due = ['a', 'b', 'c', 'd', 'e'];
    const limits: number[] = [];
    const ran: string[] = [];
    let running = 0;
    let most = 0;
    const { loop } = worker(
      async (limit) => {
        limits.push(limit);
        return due.splice(0, limit);
      },
      async (item) => {
        ran.push(item);
        most = Math.max(most, ++running);
        await new Promise((resolve) => setTimeout(resolve, 5));
        running--;
      },
      10_000,
    );
    loop.start();
    await vi.waitFor(() => expect(ran.length).toBe(5), { timeout: 5_000 });
    await loop.shutdown();
    expect(ran).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(most).toBe(2);
    // The free slots first; then, while the backlog lasts, at most one claim's worth ahead besides
    // the free slots; then one that finds it empty; no poll came in between (its interval is 10 s).
    expect(limits[0]).toBe(2);
    expect(limits.every((limit) => limit >= 1 && limit <= 4)).toBe(true);
    expect(limits.length).toBeLessThanOrEqual(5);
  });

  it('while a backlog lasts and items run briefly, claims the next ones ahead: a freed slot starts one without waiting for a claim', async () => {
    const due = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
    const ran: string[] = [];
    let claims = 0;
    let ranWhenHeld = -1;
    let hold: (() => void) | null = null;
    const { loop } = worker(
      async (limit) => {
        // The third claim hangs until let go: meanwhile only items claimed before it can start.
        if (++claims === 3) {
          ranWhenHeld = ran.length;
          await new Promise<void>((resolve) => (hold = resolve));
        }
        return due.splice(0, limit);
      },
      async (item) => {
        ran.push(item);
        await new Promise((resolve) => setTimeout(resolve, 5));
      },
      10_000,
    );
    loop.start();
    // Conditions, not a fixed sleep: on a loaded machine the items' 5 ms timers may fire late.
    await vi.waitFor(() => expect(hold).not.toBeNull(), { timeout: 5_000 });
    // Items claimed ahead took the slots that freed up while the third claim was out.
    await vi.waitFor(
      () => {
        expect(ran.length).toBeGreaterThan(ranWhenHeld);
        expect(loop.active.size).toBe(0);
      },
      { timeout: 5_000 },
    );
    hold!();
    await vi.waitFor(() => expect(ran.length).toBe(8), { timeout: 5_000 });
    await loop.shutdown();
    expect(ran).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']);
  });

  it('claims nothing ahead while its items run long', async () => {
    const due = ['a', 'b', 'c', 'd', 'e', 'f'];
    const limits: number[] = [];
    const loop = loopWith({
      claimAheadMaxRun: 1,
      claim: async (_lease, _now, limit) => {
        limits.push(limit);
        return due.splice(0, limit);
      },
      execute: () => new Promise((resolve) => setTimeout(resolve, 10)),
    });
    loop.start();
    await vi.waitFor(() => expect(due).toEqual([]), { timeout: 5_000 });
    await loop.shutdown();
    expect(limits.every((limit) => limit <= 2)).toBe(true);
  });

  it('hands back items claimed ahead at shutdown (they run with the aborted signal), and renews them while they wait', async () => {
    const due = ['a', 'b', 'c', 'd', 'e', 'f'];
    const ran: Array<[string, boolean]> = [];
    const renewed = new Set<string>();
    const loop = loopWith({
      heartbeatInterval: 15,
      claim: async (_lease, _now, limit) => due.splice(0, limit),
      // e's lease is gone (taken over after a stall): it is never started.
      renew: async (item) => (renewed.add(item), item !== 'e'),
      execute: async (item, shutdown) => {
        ran.push([item, shutdown.aborted]);
        // a and b end at once (items run briefly); c and d then hold the slots until shutdown.
        if (item === 'a' || item === 'b' || shutdown.aborted) return;
        await new Promise((resolve) => shutdown.addEventListener('abort', resolve));
      },
    });
    loop.start();
    await vi.waitFor(
      () => {
        expect([...loop.active]).toEqual(['c', 'd']);
        expect(loop.queued).toEqual(['f']);
        expect([...renewed].sort()).toEqual(['c', 'd', 'e', 'f']);
      },
      { timeout: 5_000 },
    );
    await loop.shutdown();
    expect(ran).toEqual([
      ['a', false],
      ['b', false],
      ['c', false],
      ['d', false],
      ['f', true],
    ]);
  });

  it("gives an item's slot to the next once it calls ending(), and still renews it and waits for it until it resolves", async () => {
    const due = ['a', 'b', 'c', 'd', 'e'];
    const renewed = new Set<string>();
    const started: string[] = [];
    const works = new Map<string, () => void>();
    const lastWrites = new Map<string, () => void>();
    const loop = loopWith({
      heartbeatInterval: 15,
      claim: async (_lease, _now, limit) => due.splice(0, limit),
      renew: async (item) => (renewed.add(item), true),
      execute: async (item, _shutdown, ending) => {
        started.push(item);
        // Its own work, until the test ends it; then its last write, until the test lands it.
        await new Promise<void>((resolve) => works.set(item, resolve));
        ending();
        ending();
        await new Promise<void>((resolve) => lastWrites.set(item, resolve));
      },
    });
    loop.start();
    await vi.waitFor(() => expect(started).toEqual(['a', 'b']), { timeout: 5_000 });
    works.get('a')!();
    works.get('b')!();
    // a and b only wait for their last writes: c and d have their slots, e waits for one.
    await vi.waitFor(() => expect(started).toEqual(['a', 'b', 'c', 'd']), { timeout: 5_000 });
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(started).toEqual(['a', 'b', 'c', 'd']);
    expect([...loop.active].sort()).toEqual(['a', 'b', 'c', 'd']);
    await vi.waitFor(() => expect([...renewed].sort()).toEqual(expect.arrayContaining(['a', 'b', 'c', 'd'])), {
      timeout: 5_000,
    });
    // a's last write landing frees nothing more: its slot went to c already.
    lastWrites.get('a')!();
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(started).toEqual(['a', 'b', 'c', 'd']);
    works.get('c')!();
    await vi.waitFor(() => expect(started).toEqual(['a', 'b', 'c', 'd', 'e']), { timeout: 5_000 });
    // Shutdown waits for every execution, last writes included.
    let stopped = false;
    const stopping = loop.shutdown().then(() => (stopped = true));
    for (const item of ['d', 'e']) await vi.waitFor(() => expect(works.has(item)).toBe(true), { timeout: 5_000 });
    works.get('d')!();
    works.get('e')!();
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(stopped).toBe(false);
    for (const resolve of lastWrites.values()) resolve();
    await vi.waitFor(() => expect(lastWrites.size).toBe(5), { timeout: 5_000 });
    for (const resolve of lastWrites.values()) resolve();
    await stopping;
    expect([...loop.active]).toEqual([]);
  });

  it('claims what named wake-ups name by id, and looks at everything after a plain one, a miss or a backlog', async () => {
    const claims: Array<{ limit: number; ids?: string[] }> = [];
    let answer: (limit: number, ids?: string[]) => string[] = () => [];
    const loop = loopWith({
      concurrency: 3,
      claim: async (_lease, _now, limit, ids) => {
        claims.push(ids === undefined ? { limit } : { limit, ids });
        return answer(limit, ids);
      },
      idOf: (item) => item,
    });
    const settled = () => new Promise((resolve) => setTimeout(resolve, 20));
    loop.start();
    await settled();
    expect(claims).toEqual([{ limit: 3 }]);
    // Named: just those, by id.
    answer = (_limit, ids) => ids ?? [];
    loop.kick('a');
    loop.kick('b');
    await settled();
    expect(claims.slice(1)).toEqual([{ limit: 3, ids: ['a', 'b'] }]);
    // A plain wake-up among named ones: everything.
    loop.kick('c');
    loop.kick();
    await settled();
    expect(claims.slice(2)).toEqual([{ limit: 3 }]);
    // A named one not taken (another worker has it): everything, at once.
    answer = () => [];
    loop.kick('d');
    await settled();
    expect(claims.slice(3)).toEqual([{ limit: 3, ids: ['d'] }, { limit: 3 }]);
    // More named than free slots: everything.
    for (const id of ['e', 'f', 'g', 'h']) loop.kick(id);
    await settled();
    expect(claims.slice(5)).toEqual([{ limit: 3 }]);
    // A full claim came back full (a backlog): a named wake-up while it lasts looks at everything too.
    let release!: () => void;
    const blocked = new Promise<void>((resolve) => (release = resolve));
    answer = (limit, ids) => (ids ? [] : ['x', 'y', 'z'].slice(0, limit));
    const slow = loopWith({
      concurrency: 3,
      claim: async (_lease, _now, limit, ids) => {
        claims.push(ids === undefined ? { limit } : { limit, ids });
        const items = answer(limit, ids);
        answer = () => [];
        return items;
      },
      idOf: (item) => item,
      execute: () => blocked,
    });
    claims.length = 0;
    slow.start();
    await settled();
    slow.kick('n');
    await settled();
    release();
    await settled();
    // The free slots and, the items having run briefly, as many ahead.
    expect(claims).toEqual([{ limit: 3 }, { limit: 6 }]);
    await Promise.all([loop.shutdown(), slow.shutdown()]);
  });

  it('keeps its poll while named wake-ups come more often than the poll interval', async () => {
    const full: number[] = [];
    let named = 0;
    const loop = loopWith({
      pollInterval: 60,
      claim: async (_lease, _now, _limit, ids) => {
        if (ids === undefined) full.push(Date.now());
        else named++;
        return ids ?? [];
      },
      idOf: (item) => item,
    });
    loop.start();
    const started = Date.now();
    for (let i = 0; Date.now() - started < 600; i++) {
      loop.kick(`s${i}`);
      await new Promise((resolve) => setTimeout(resolve, 15));
    }
    await loop.shutdown();
    expect(named).toBeGreaterThan(10);
    // A full claim about every poll interval (60 ms), with room for a loaded machine's timers.
    const gaps = full.slice(1).map((t, i) => t - full[i]!);
    expect(full.length).toBeGreaterThanOrEqual(4);
    expect(Math.max(...gaps)).toBeLessThan(300);
  });

  it('claims unprompted only while a backlog lasts: through its claims, until one comes back short or fails', async () => {
    const settle = () => new Promise((resolve) => setTimeout(resolve, 0));
    for (const last of ['short', 'failed'] as const) {
      // Claims that wait for `answer()`; items that end at once.
      const limits: number[] = [];
      const answers: Array<(items: string[] | Error) => void> = [];
      const loop = loopWith({
        claim: (_lease, _now, limit) =>
          new Promise<string[]>((resolve, reject) => {
            limits.push(limit);
            answers.push((items) => (items instanceof Error ? reject(items) : resolve(items)));
          }),
      });
      const answer = async (items: string[] | Error) => {
        answers.shift()!(items);
        await settle();
      };
      const full = () => Array.from({ length: limits.at(-1)! }, (_, index) => `item-${limits.length}-${index}`);
      expect(loop.claimsUnprompted).toBe(false);
      loop.start();
      await settle();
      // The first claim: no backlog known, so wake-ups are needed.
      expect(limits).toEqual([2]);
      expect(loop.claimsUnprompted).toBe(false);
      // Full: the next claim, over all due work, is out at once; and again.
      await answer(full());
      expect(limits.length).toBe(2);
      expect(loop.claimsUnprompted).toBe(true);
      await answer(full());
      expect(limits.length).toBe(3);
      expect(loop.claimsUnprompted).toBe(true);
      // One that comes back short, or fails, ends it: no claim follows without a poll or a kick.
      await answer(last === 'short' ? ['x'] : new Error('database down'));
      expect(limits.length).toBe(3);
      expect(loop.claimsUnprompted).toBe(false);
      await loop.shutdown();
    }
  });

  it('does not claim unprompted while a full claim waits for a slot after shutdown', async () => {
    const loop = loopWith({
      claim: async (_lease, _now, limit) => Array.from({ length: limit }, (_, index) => `i${index}`),
      execute: () => new Promise<void>(() => undefined),
      shutdownTimeout: 0,
    });
    loop.start();
    await new Promise((resolve) => setTimeout(resolve, 0));
    // Both slots taken by items that never end: the backlog's next claim waits for one to free.
    expect(loop.claimsUnprompted).toBe(true);
    await loop.shutdown();
    expect(loop.claimsUnprompted).toBe(false);
  });

  it('gives a reserved slot that goes unused to an item claimed while it was reserved', async () => {
    const ran: string[] = [];
    let claims = 0;
    let answer: ((items: string[]) => void) | undefined;
    const loop = loopWith({
      // The first claim waits for the test; the next ones find nothing more due.
      claim: async () => (++claims === 1 ? new Promise<string[]>((resolve) => (answer = resolve)) : []),
      execute: async (item) => void ran.push(item),
    });
    loop.start();
    await vi.waitFor(() => expect(answer).toBeDefined(), { timeout: 5_000 });
    // Two local starts take both slots while the claim is out; it then comes back full: a and b wait for slots.
    expect(loop.reserve()).not.toBeNull();
    expect(loop.reserve()).not.toBeNull();
    answer!(['a', 'b']);
    await vi.waitFor(() => expect(loop.queued).toEqual(['a', 'b']), { timeout: 5_000 });
    // Neither start created an instance (both existed already): their slots go to a and b.
    loop.unreserve();
    loop.unreserve();
    await vi.waitFor(() => expect(ran).toEqual(['a', 'b']), { timeout: 1_000 });
    expect(loop.queued).toEqual([]);
    await loop.shutdown();
  });

  it('waits at shutdown for a start that reserved a slot before it, and runs its item with the aborted signal', async () => {
    const seen: Array<[string, boolean]> = [];
    const loop = loopWith({
      claim: async () => [],
      execute: async (item, shutdown) => {
        seen.push([item, shutdown.aborted]);
        await new Promise((resolve) => setTimeout(resolve, 20));
        seen.push([`${item} handed back`, shutdown.aborted]);
      },
    });
    loop.start();
    const lease = loop.reserve();
    expect(lease).not.toBeNull();
    let stopped = false;
    const stopping = loop.shutdown().then(() => (stopped = true));
    // The start's create answers after the shutdown began.
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(stopped).toBe(false);
    expect(loop.reserve()).toBeNull();
    loop.adopt('started');
    await stopping;
    expect(seen).toEqual([
      ['started', true],
      ['started handed back', true],
    ]);
  });

  it('stops waiting for a reserved slot after shutdownTimeout', async () => {
    const loop = loopWith({ claim: async () => [], shutdownTimeout: 30 });
    loop.start();
    expect(loop.reserve()).not.toBeNull();
    const started = Date.now();
    await loop.shutdown();
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('renews the items of a drain() while another drain() that ran alongside it ends', async () => {
    const due = ['quick', 'long'];
    const renewed: string[] = [];
    let finish!: () => void;
    const loop = loopWith({
      concurrency: 1,
      heartbeatInterval: 5,
      claim: async (_lease, _now, limit) => due.splice(0, limit),
      renew: async (item) => (renewed.push(item), true),
      execute: (item) => (item === 'long' ? new Promise<void>((resolve) => (finish = resolve)) : Promise.resolve()),
    });
    const first = loop.drain();
    const second = loop.drain();
    expect(await first).toBe(1);
    // The first drain is over; the second still runs 'long', whose lease must be kept.
    const before = renewed.filter((item) => item === 'long').length;
    await vi.waitFor(() => expect(renewed.filter((item) => item === 'long').length).toBeGreaterThan(before + 1), {
      timeout: 1_000,
    });
    finish();
    expect(await second).toBe(1);
    await loop.shutdown();
  });

  it('shuts down twice safely, and drain() runs what is due without the loop', async () => {
    const due = ['x', 'y', 'z'];
    const ran: string[] = [];
    const { loop } = worker(
      async (limit) => due.splice(0, limit),
      async (item) => void ran.push(item),
    );
    expect(await loop.drain()).toBe(3);
    expect(ran).toEqual(['x', 'y', 'z']);
    await Promise.all([loop.shutdown(), loop.shutdown()]);
    due.push('after');
    expect(await loop.drain()).toBe(0);
    expect(ran).toEqual(['x', 'y', 'z']);
  });
});
