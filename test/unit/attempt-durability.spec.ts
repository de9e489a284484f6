import { afterEach, describe, expect, it } from 'vitest';
import { InMemoryWorkflowStore, Workflow, type WorkflowContext } from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

let app: EngineApp | undefined;
let store: InMemoryWorkflowStore;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

/** The attempts each step's code saw, in order. */
const seen: Array<[string, number]> = [];
/** Per step, the attempts during which another worker takes the lease (as if this process died). */
let cutShort: Record<string, number[]> = {};
/** Per step, the attempts that throw (and so are retried after the backoff). */
let failing: Record<string, number[]> = {};

/**
 * Another worker claims the instance while this attempt runs (its lease lapsed): this execution's
 * writes are fenced off from here, as a killed process's would be lost, and that worker dies too.
 */
async function maybeCutShort(id: string, name: string, attempt: number): Promise<void> {
  if (!cutShort[name]?.includes(attempt)) return;
  app!.clock.advance(31_000);
  const now = app!.clock.now();
  const { instances } = await store.claim({
    owner: 'killed',
    token: `killed-${name}-${attempt}`,
    now,
    leaseUntil: now + 1,
    limit: 1,
    workflows: [{ name: 'attempts.durable', version: 1 }],
  });
  expect(instances.map((i) => i.id)).toEqual([id]);
}

@Workflow('attempts.durable')
class Durable {
  async run(ctx: WorkflowContext, steps: string[]) {
    const one = (name: string) =>
      ctx.step(
        name,
        async ({ attempt }) => {
          seen.push([name, attempt]);
          await maybeCutShort(ctx.id, name, attempt);
          if (failing[name]?.includes(attempt)) throw new Error(`attempt ${attempt} fails`);
          return attempt;
        },
        { retry: { attempts: 10, backoff: '1s' } },
      );
    // Steps named together in one string run in parallel.
    for (const group of steps) await Promise.all(group.split('+').map(one));
  }
}

/** Runs the instance to its end, moving the clock past each lapsed lease and backoff. */
async function runToEnd(id: string): Promise<void> {
  for (let i = 0; i < 20; i++) {
    await app!.worker.drain();
    const { status } = await app!.client.getStatus(id);
    if (status === 'completed' || status === 'failed') return;
    app!.clock.advance(31_000);
  }
  throw new Error(`instance "${id}" did not end`);
}

async function attemptsOf(id: string): Promise<Array<[string, string, number | undefined]>> {
  const journal = (await app!.client.getStatus(id, { journal: true })).journal!;
  return journal.map((e) => [e.name, e.state, e.attempts]);
}

describe('the start of an attempt is durable', () => {
  async function start(steps: string[], id: string) {
    seen.length = 0;
    store = new InMemoryWorkflowStore();
    app = await createEngineApp({ workflows: [Durable], store });
    await app.client.start(Durable, steps, { id });
    await runToEnd(id);
  }

  it('counts a step cut short twice in a row as attempts 1, 2 and 3', async () => {
    cutShort = { work: [1, 2] };
    failing = {};
    await start(['work'], 'twice');
    expect(seen).toEqual([
      ['work', 1],
      ['work', 2],
      ['work', 3],
    ]);
    expect(await attemptsOf('twice')).toEqual([['work', 'completed', 3]]);
  });

  it('counts a step cut short three times, after a completed step, as its attempts 1 to 4', async () => {
    cutShort = { second: [1, 2, 3] };
    failing = {};
    await start(['first', 'second'], 'thrice');
    expect(seen).toEqual([
      ['first', 1],
      ['second', 1],
      ['second', 2],
      ['second', 3],
      ['second', 4],
    ]);
    expect(await attemptsOf('thrice')).toEqual([
      ['first', 'completed', 1],
      ['second', 'completed', 4],
    ]);
  });

  it('counts an attempt after a backoff that was cut short: the next one has a new number', async () => {
    cutShort = { work: [2] };
    failing = { work: [1] };
    await start(['work'], 'after-backoff');
    expect(seen).toEqual([
      ['work', 1],
      ['work', 2],
      ['work', 3],
    ]);
    expect(await attemptsOf('after-backoff')).toEqual([['work', 'completed', 3]]);
  });

  it('never repeats an attempt number of two parallel steps cut short twice', async () => {
    cutShort = { left: [1, 2] };
    failing = {};
    await start(['left+right'], 'parallel');
    const attemptsSeen = (name: string) => seen.filter(([n]) => n === name).map(([, attempt]) => attempt);
    expect(attemptsSeen('left')).toEqual([1, 2, 3]);
    // "right" runs beside "left"; an attempt recorded as started just before the lease was taken
    // may never run (the number then skips), but none runs under a number an earlier one had.
    const right = attemptsSeen('right');
    expect(right.every((attempt, i) => i === 0 || attempt > right[i - 1]!)).toBe(true);
    expect(right[0]).toBe(1);
    expect(await attemptsOf('parallel')).toEqual([
      ['left', 'completed', 3],
      ['right', 'completed', right.at(-1)],
    ]);
  });
});
