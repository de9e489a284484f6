// Values that JSON can't carry faithfully are refused where they enter (an input, a signal payload,
// a step result, a custom status, an output), naming the path, before anything is stored and
// before any later side effect runs; a Date follows one rule on the first run and on replay.
import { afterEach, describe, expect, it } from 'vitest';
import { InMemoryWorkflowStore, Workflow, WorkflowSignal, type WorkflowContext } from '../../src/index.js';
import { MAX_OPERATION_NAME_LENGTH } from '../../src/engine/operation-names.js';
import { STORE_KEY_LIMITS } from '../../src/storage/key-limits.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

let app: EngineApp | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

class Money {
  constructor(readonly cents: number) {}
}

class Stamp {
  constructor(readonly at: number) {}
  toJSON() {
    return { stamp: this.at };
  }
}

@Workflow('values.echo', { retry: false })
class Echo {
  async run(_ctx: WorkflowContext, input: unknown) {
    return input;
  }
}

describe('values that JSON would store as {}', () => {
  for (const [label, bad, found] of [
    ['a Map', new Map([['a', 1]]), /a Map at input\.items\..*Object\.fromEntries/],
    ['a Set', new Set([1]), /a Set at input\.items\..*\[\.\.\.set\]/],
    ['a class instance', new Money(5), /an instance of Money at input\.items\..*\{ \.\.\.dto \}/],
  ] as const) {
    it(`refuses ${label} in an input, naming the path, and stores nothing`, async () => {
      app = await createEngineApp({ workflows: [Echo] });
      await expect(app.client.start(Echo, { items: bad }, { id: 'one' })).rejects.toThrow(found);
      await expect(app.client.start(Echo, { items: bad }, { id: 'one' })).rejects.toThrow(
        /The input of workflow "values\.echo" is not a JSON value/,
      );
      expect(await app.client.list()).toEqual([]);
    });
  }

  it('asks for plain data in words that fit an input as well as a result (no "Return" for what the caller passes)', async () => {
    app = await createEngineApp({ workflows: [Echo] });
    const refused = (await app.client.start(Echo, { items: () => 1 }).catch((error: unknown) => error)) as Error;
    expect(refused.message).toBe(
      'The input of workflow "values.echo" is not a JSON value: a function at input.items. ' +
        'Use plain data (objects, arrays, strings, numbers, booleans, null).',
    );
  });

  it('names nested paths and odd keys', async () => {
    app = await createEngineApp({ workflows: [Echo] });
    await expect(app.client.start(Echo, { a: [{ 'odd key': new Set() }] })).rejects.toThrow(
      /a Set at input\.a\[0\]\["odd key"\]/,
    );
  });

  it('refuses a Map in a signal payload and stores no signal', async () => {
    app = await createEngineApp();
    await expect(app.client.signal('paid', { by: new Map() })).rejects.toThrow(
      /The payload of signal "paid" is not a JSON value: a Map at payload\.by/,
    );
    expect(await app.store.signals({ name: 'paid', key: null, afterId: 0, upToId: Number.MAX_SAFE_INTEGER })).toEqual(
      [],
    );
  });

  it('fails a step whose result is a Set at once: no retry, and nothing after it runs', async () => {
    const ran: string[] = [];
    @Workflow('values.step', { retry: 5 })
    class StepSet {
      async run(ctx: WorkflowContext) {
        await ctx.step('collect', () => {
          ran.push('collect');
          return { seen: new Set(['a']) };
        });
        await ctx.step('after', () => ran.push('after'));
      }
    }
    app = await createEngineApp({ workflows: [StepSet] });
    const handle = await app.client.start(StepSet, null);
    await app.worker.drain();
    const status = await handle.status({ journal: true });
    expect(status.status).toBe('failed');
    expect(status.error!.message).toMatch(/The result of step "collect" is not a JSON value: a Set at result\.seen/);
    expect(ran).toEqual(['collect']);
    expect(status.journal!.find((e) => e.name === 'collect')).toMatchObject({ state: 'failed', attempts: 1 });
    expect(status.journal!.find((e) => e.name === 'collect')).not.toHaveProperty('value');
  });

  it('refuses a Map as a custom status: the status is not stored and the instance fails', async () => {
    @Workflow('values.status', { retry: false })
    class StatusMap {
      async run(ctx: WorkflowContext) {
        ctx.setStatus({ stage: 'start' });
        await ctx.step('a', () => 1);
        ctx.setStatus({ progress: new Map() });
        return 'done';
      }
    }
    app = await createEngineApp({ workflows: [StatusMap] });
    const handle = await app.client.start(StatusMap, null);
    await app.worker.drain();
    const status = await handle.status();
    expect(status.status).toBe('failed');
    expect(status.error!.message).toMatch(/ctx\.setStatus\(\) value is not a JSON value: a Map at status\.progress/);
    expect(status.customStatus).toEqual({ stage: 'start' });
  });

  it('refuses an output holding a class instance: the instance fails, and the output is not stored', async () => {
    @Workflow('values.output', { retry: false })
    class OutputMoney {
      async run() {
        return { total: new Money(100) };
      }
    }
    app = await createEngineApp({ workflows: [OutputMoney] });
    const handle = await app.client.start(OutputMoney, null);
    await app.worker.drain();
    const status = await handle.status();
    expect(status.status).toBe('failed');
    expect(status.error!.message).toMatch(
      /The output of workflow "values\.output" is not a JSON value: an instance of Money at output\.total/,
    );
    expect(status.output).toBeNull();
  });

  it('refuses a Map in a child input before the child exists', async () => {
    @Workflow('values.parent', { retry: false })
    class Parent {
      async run(ctx: WorkflowContext) {
        return ctx.executeChild('kid', Echo, { lookup: new Map() });
      }
    }
    app = await createEngineApp({ workflows: [Echo, Parent] });
    const handle = await app.client.start(Parent, null, { id: 'p' });
    await app.worker.drain();
    expect((await handle.status()).error!.message).toMatch(
      /The input of child "kid" is not a JSON value: a Map at input\.lookup/,
    );
    expect((await app.client.list()).map((i) => i.id)).toEqual(['p']);
  });

  it('refuses an object whose toJSON() returns a Map', async () => {
    app = await createEngineApp({ workflows: [Echo] });
    await expect(app.client.start(Echo, { x: { toJSON: () => new Map() } })).rejects.toThrow(/a Map at input\.x/);
  });
});

describe('dates and toJSON()', () => {
  it('stores an object with toJSON() as what it returns, and a Date as its ISO string, in inputs and outputs', async () => {
    app = await createEngineApp({ workflows: [Echo] });
    const handle = await app.client.start(Echo, { at: new Date(0), stamp: new Stamp(7) });
    await app.worker.drain();
    expect(await handle.result()).toEqual({ at: '1970-01-01T00:00:00.000Z', stamp: { stamp: 7 } });
  });

  it('a workflow sees an input Date as the ISO string, on the first run and after a restart alike', async () => {
    const seen: unknown[] = [];
    @Workflow('values.date-input')
    class DateInput {
      async run(ctx: WorkflowContext, input: { at: unknown }) {
        seen.push(input.at);
        await ctx.sleep('pause', '1s');
        const stepped = await ctx.step('when', () => new Date(1000));
        seen.push(stepped);
      }
    }
    app = await createEngineApp({ workflows: [DateInput] });
    await app.client.start(DateInput, { at: new Date(0) });
    await app.worker.drain();
    app.clock.advance('1s');
    await app.worker.drain();
    // First execution, then the replay after the sleep: the same string each time, never a Date.
    expect(seen).toEqual(['1970-01-01T00:00:00.000Z', '1970-01-01T00:00:00.000Z', '1970-01-01T00:00:01.000Z']);
  });
});

describe('timeouts', () => {
  it('refuses start(..., { timeout: 0 }) and stores nothing', async () => {
    app = await createEngineApp({ workflows: [Echo] });
    await expect(app.client.start(Echo, null, { id: 'zero', timeout: 0 })).rejects.toThrow(
      /Invalid start\(\) option "timeout": 0\. It must be longer than 0/,
    );
    await expect(app.client.start(Echo, null, { id: 'zero', timeout: '0s' })).rejects.toThrow(
      /"0s"\. It must be longer than 0/,
    );
    expect(await app.client.list()).toEqual([]);
  });

  it('refuses a workflow timeout of 0 at startup', async () => {
    @Workflow('values.zero-timeout', { timeout: 0 })
    class ZeroTimeout {
      async run() {}
    }
    await expect(createEngineApp({ workflows: [ZeroTimeout] })).rejects.toThrow(
      /timeout of @Workflow\('values\.zero-timeout'\) on ZeroTimeout: 0\. It must be longer than 0/,
    );
  });

  it('says what a duration is, in a sentence that reads', async () => {
    @Workflow('values.bad-sleep', { retry: false })
    class BadSleep {
      async run(ctx: WorkflowContext) {
        await ctx.sleep('nap', '5 parsecs');
      }
    }
    app = await createEngineApp({ workflows: [BadSleep] });
    const handle = await app.client.start(BadSleep, null);
    await app.worker.drain();
    expect((await handle.status()).error!.message).toBe(
      `Invalid duration of sleep "nap": "5 parsecs". A duration is a non-negative number of milliseconds, or a string such as '250ms', '5s', '10m', '1h30m' or '7d', and at most 100,000,000 days.`,
    );
  });
});

describe('key limits of the in-memory store', () => {
  it('refuses an id longer than the SQL stores keep, as they do, and stores nothing', async () => {
    app = await createEngineApp({ workflows: [Echo] });
    const id = 'x'.repeat(10_000);
    await expect(app.client.start(Echo, null, { id })).rejects.toThrow(
      /InMemoryWorkflowStore: instance id is 10000 characters long.*at most 255/,
    );
    expect(await app.client.list()).toEqual([]);
    await expect(app.client.signal('s'.repeat(300), null)).rejects.toThrow(/signal name is 300 characters long/);
    await expect(app.client.signal('ok', null, { key: 'k'.repeat(256) })).rejects.toThrow(
      /signal key is 256 characters long/,
    );
  });

  it('refuses a journal entry name longer than the SQL stores keep, writing nothing', async () => {
    const store = new InMemoryWorkflowStore();
    await store.create({ id: 'a', workflow: 'w', version: 1, input: null, deadline: null, wakeAt: 0, now: 0 });
    const claim = await store.claim({
      owner: 'me',
      token: 't1',
      now: 0,
      leaseUntil: 30_000,
      limit: 1,
      workflows: [{ name: 'w', version: 1 }],
    });
    expect(claim.instances.map((i) => i.id)).toEqual(['a']);
    const entry = {
      name: 's'.repeat(600),
      kind: 'step' as const,
      state: 'completed' as const,
      value: 1,
      attempts: 1,
      createdAt: 0,
      updatedAt: 0,
    };
    await expect(store.write('a', 't1', { entries: [entry], status: 'completed', now: 1 })).rejects.toThrow(
      /InMemoryWorkflowStore: journal entry name is 600 characters long.*at most 512/,
    );
    const after = await store.get('a', { journal: true });
    expect(after).toMatchObject({ status: 'running', journal: [] });
  });
});

describe('operation names the stores could not keep', () => {
  @Workflow('values.long-step-name')
  class LongStepName {
    async run(ctx: WorkflowContext, length: number): Promise<string> {
      return ctx.step('é'.repeat(length), () => 'done');
    }
  }

  it("allows a name of exactly the stores' limit and refuses one character more at the ctx call, failing the instance clearly", async () => {
    expect(MAX_OPERATION_NAME_LENGTH).toBe(STORE_KEY_LIMITS.journalName);
    app = await createEngineApp({ workflows: [LongStepName] });
    const fits = await app.client.start(LongStepName, MAX_OPERATION_NAME_LENGTH);
    const over = await app.client.start(LongStepName, MAX_OPERATION_NAME_LENGTH + 1);
    await app.worker.drain();
    expect(await fits.status()).toMatchObject({ status: 'completed', output: 'done' });
    const failed = await over.status({ journal: true });
    expect(failed).toMatchObject({ status: 'failed', error: { name: 'RangeError' } });
    expect(failed.error?.message).toMatch(
      /is 513 characters long; step, sleep, wait and child names may have at most 512/,
    );
    expect(failed.journal).toEqual([]);
  });

  it('refuses a name holding a NUL character or a lone surrogate at the ctx call, failing the instance clearly', async () => {
    @Workflow('values.odd-step-name', { retry: false })
    class OddStepName {
      async run(ctx: WorkflowContext, kind: string): Promise<string> {
        // Made here: an input can't carry a lone surrogate.
        return ctx.step(kind === 'nul' ? 'nul\u0000' : `half${'😀'.slice(0, 1)}`, () => 'done');
      }
    }
    app = await createEngineApp({ workflows: [OddStepName] });
    const handles = await Promise.all(['nul', 'half'].map((kind) => app!.client.start(OddStepName, kind)));
    await app.worker.drain();
    for (const handle of handles) {
      const failed = await handle.status({ journal: true });
      expect(failed).toMatchObject({ status: 'failed', error: { name: 'TypeError' } });
      expect(failed.error?.message).toMatch(
        /holds a NUL character or a lone surrogate, which no store keeps in a name/,
      );
      expect(failed.journal).toEqual([]);
    }
  });
});

const tally = new WorkflowSignal<{ votes: string[] }>('values.tally');

@Workflow('values.changes-result', { retry: false })
class ChangesResult {
  async run(ctx: WorkflowContext) {
    const list = await ctx.step('a', () => ['first']);
    const status = await ctx.step('b', () => ({ seen: 0 }));
    // The code changes what the steps returned before the journal is written (the next wait).
    list.push('pushed');
    status.seen++;
    await ctx.sleep('nap', '1s');
    const payload = await ctx.waitForSignal('tally', tally);
    payload.votes.push('mine');
    await ctx.sleep('nap-2', '1s');
    return { list, status, payload };
  }
}

describe('a step result the code changes in place', () => {
  it('is journaled as the step returned it: the replay sees what the first run saw, and changes it the same way', async () => {
    app = await createEngineApp({ workflows: [ChangesResult] });
    await app.client.start(ChangesResult, undefined, { id: 'changes-1' });
    expect(await app.worker.drain()).toBe(1);
    const suspended = await app.client.getStatus('changes-1', { journal: true });
    expect(suspended.journal!.map((entry) => [entry.name, entry.value])).toEqual([
      ['a', ['first']],
      ['b', { seen: 0 }],
      ['nap', undefined],
    ]);
    app.clock.advance('1s');
    expect(await app.worker.drain()).toBe(1);
    await app.client.signal(tally, { votes: ['theirs'] });
    expect(await app.worker.drain()).toBe(1);
    expect(
      (await app.client.getStatus('changes-1', { journal: true })).journal!.find((entry) => entry.name === 'tally')!
        .value,
    ).toEqual({ votes: ['theirs'] });
    app.clock.advance('1s');
    expect(await app.worker.drain()).toBe(1);
    expect((await app.client.getStatus('changes-1')).output).toEqual({
      list: ['first', 'pushed'],
      status: { seen: 1 },
      payload: { votes: ['theirs', 'mine'] },
    });
  });
});

describe('strings that are not well-formed Unicode (a lone surrogate, which no store keeps)', () => {
  it('fail a step whose result holds one at once, naming the path, and the failure is recorded', async () => {
    const ran: string[] = [];
    @Workflow('values.lone-surrogate', { retry: 5 })
    class LoneSurrogate {
      async run(ctx: WorkflowContext) {
        await ctx.step('cut', () => {
          ran.push('cut');
          // Half of an emoji, as slice() leaves it.
          return { text: 'done 😀'.slice(0, 6), tags: { ['k\udc00']: 1 } };
        });
      }
    }
    app = await createEngineApp({ workflows: [LoneSurrogate] });
    const handle = await app.client.start(LoneSurrogate, null);
    await app.worker.drain();
    const status = await handle.status({ journal: true });
    expect(status.status).toBe('failed');
    expect(status.error!.message).toMatch(
      /The result of step "cut" is not a JSON value: a string that is not well-formed Unicode \(a lone surrogate\) at result\.text\. .*toWellFormed/,
    );
    expect(ran).toEqual(['cut']);
  });

  it('in a thrown error are made U+FFFD, so the failure is stored and read back', async () => {
    @Workflow('values.lone-surrogate-error', { retry: false })
    class CutMessage {
      async run(ctx: WorkflowContext) {
        await ctx.step('throws', () => {
          const error = new Error(`bad input ${'😀'.slice(0, 1)}`);
          Object.assign(error, { detail: 'x\ud800', context: { at: '\udfff' }, code: 7 });
          throw error;
        });
      }
    }
    app = await createEngineApp({ workflows: [CutMessage] });
    const handle = await app.client.start(CutMessage, null);
    await app.worker.drain();
    const status = await handle.status({ journal: true });
    expect(status.status).toBe('failed');
    expect(status.error).toMatchObject({ message: 'bad input \ufffd', detail: 'x\ufffd', code: 7 });
    expect(status.error).not.toHaveProperty('context');
  });
});

describe('a compensation that changes the result it is given in place', () => {
  it('leaves the journaled result as the step returned it', async () => {
    @Workflow('values.compensation-changes', { retry: false })
    class CompensationChanges {
      async run(ctx: WorkflowContext) {
        await ctx.step('book', () => ({ seats: ['1A'] }), {
          compensate: (booked: { seats: string[] }) => {
            booked.seats.length = 0;
          },
        });
        await ctx.step('fail', () => {
          throw new Error('no hotel');
        });
      }
    }
    app = await createEngineApp({ workflows: [CompensationChanges] });
    const handle = await app.client.start(CompensationChanges, null);
    await app.worker.drain();
    const status = await handle.status({ journal: true });
    expect(status.status).toBe('failed');
    expect(status.journal!.find((entry) => entry.name === 'book')).toMatchObject({
      compensated: true,
      value: { seats: ['1A'] },
    });
  });
});
