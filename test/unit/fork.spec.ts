import { afterEach, describe, expect, it } from 'vitest';
import { Workflow, WorkflowAlreadyStartedError, WorkflowSignal, type WorkflowContext } from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

const approval = new WorkflowSignal<string>('fork.approval');

class Ledger {
  log: string[] = [];
  failing = new Set<string>();
  do(what: string): string {
    this.log.push(what);
    if (this.failing.has(what)) throw new Error(`${what} failed`);
    return what;
  }
}

@Workflow('fork.order', { retry: false })
class Order {
  constructor(private readonly ledger: Ledger) {}
  async run(ctx: WorkflowContext, input: { n: number }) {
    const charged = await ctx.step('charge', () => this.ledger.do(`charge ${input.n}`), {
      compensate: () => this.ledger.do(`refund ${input.n}`),
    });
    const first = await ctx.waitForSignal('first', approval);
    await ctx.step('pack', () => this.ledger.do(`pack ${input.n}`));
    const second = await ctx.waitForSignal('second', approval);
    await ctx.step('ship', () => this.ledger.do(`ship ${input.n}`), {
      compensate: () => this.ledger.do(`unship ${input.n}`),
    });
    await ctx.step('bill', () => this.ledger.do(`bill ${input.n}`));
    return { charged, first, second };
  }
}

@Workflow('fork.kid')
class Kid {
  constructor(private readonly ledger: Ledger) {}
  async run(ctx: WorkflowContext, input: { wait: boolean }) {
    this.ledger.log.push(`kid ${ctx.id}`);
    if (input.wait) await ctx.waitForSignal('go', approval, { key: ctx.id });
    return `done ${ctx.id}`;
  }
}

@Workflow('fork.family')
class Family {
  async run(ctx: WorkflowContext) {
    const early = await ctx.executeChild('early', Kid, { wait: false });
    const late = await ctx.startChild('late', Kid, { wait: true });
    await ctx.step('middle', () => 'middle');
    return [early, await late.result()];
  }
}

let app: EngineApp;
afterEach(async () => app?.close());

async function setup() {
  const ledger = new Ledger();
  app = await createEngineApp({ workflows: [new Order(ledger), new Kid(ledger), new Family()] });
  return ledger;
}

describe('fork', () => {
  it('runs the named step and everything after it again, keeps what came before, and leaves the source alone', async () => {
    const ledger = await setup();
    await app.client.start(Order, { n: 1 }, { id: 'src' });
    await app.worker.drain();
    await app.client.signal(approval, 'a1');
    await app.worker.drain();
    await app.client.signal(approval, 'a2');
    await app.worker.drain();
    const source = await app.client.getStatus('src', { journal: true });
    expect(source.status).toBe('completed');
    ledger.log = [];

    const fork = await app.client.fork('src', { fromStep: 'ship', id: 'again' });
    expect(fork.id).toBe('again');
    await app.worker.drain();
    expect(ledger.log).toEqual(['ship 1', 'bill 1']);
    const status = await app.client.getStatus('again');
    expect(status).toMatchObject({
      status: 'completed',
      workflow: 'fork.order',
      forkedFrom: { id: 'src', step: 'ship' },
      output: { charged: 'charge 1', first: 'a1', second: 'a2' },
    });
    expect(app.events.filter((e) => e.type === 'workflow-forked')).toEqual([
      expect.objectContaining({ id: 'again', workflow: 'fork.order', from: { id: 'src', step: 'ship' } }),
    ]);
    expect(await app.client.getStatus('src', { journal: true })).toEqual(source);

    // The same fork again returns it; another fork under its id is refused.
    expect((await app.client.fork('src', { fromStep: 'ship', id: 'again' })).id).toBe('again');
    await expect(app.client.fork('src', { fromStep: 'pack', id: 'again' })).rejects.toBeInstanceOf(
      WorkflowAlreadyStartedError,
    );
  });

  it('takes only signals sent after the fork for the waits it reaches again, and keeps those taken before', async () => {
    const ledger = await setup();
    await app.client.start(Order, { n: 2 }, { id: 'src' });
    await app.worker.drain();
    await app.client.signal(approval, 'a1');
    await app.worker.drain();
    await app.client.signal(approval, 'a2');
    await app.worker.drain();
    ledger.log = [];

    await app.client.fork('src', { fromStep: 'pack', id: 'f', input: { n: 3 } });
    await app.worker.drain();
    // a2 was sent before the fork: the fork's "second" wait does not take it.
    expect(await app.client.getStatus('f')).toMatchObject({ status: 'suspended', waits: [{ name: 'fork.approval' }] });
    expect(ledger.log).toEqual(['pack 3']);
    await app.client.signal(approval, 'a3');
    await app.worker.drain();
    expect(await app.client.getStatus('f')).toMatchObject({
      status: 'completed',
      input: { n: 3 },
      output: { charged: 'charge 2', first: 'a1', second: 'a3' },
    });
  });

  it('runs steps again whose compensations ran in the source, and copies no compensation', async () => {
    const ledger = await setup();
    ledger.failing.add('bill 4');
    await app.client.start(Order, { n: 4 }, { id: 'src' });
    await app.worker.drain();
    await app.client.signal(approval, 'a1');
    await app.worker.drain();
    await app.client.signal(approval, 'a2');
    await app.worker.drain();
    expect((await app.client.getStatus('src')).status).toBe('failed');
    expect(ledger.log).toEqual(['charge 4', 'pack 4', 'ship 4', 'bill 4', 'unship 4', 'refund 4']);
    ledger.log = [];
    ledger.failing.clear();

    await app.client.fork('src', { fromStep: 'bill', id: 'f' });
    await app.worker.drain();
    // charge and ship were refunded and unshipped: they run again; pack (no compensation) keeps its result.
    expect(ledger.log).toEqual(['charge 4', 'ship 4', 'bill 4']);
    const fork = await app.client.getStatus('f', { journal: true });
    expect(fork.status).toBe('completed');
    expect(fork.journal!.filter((e) => e.kind === 'compensation')).toEqual([]);
    expect((await app.client.getStatus('src')).status).toBe('failed');
  });

  it('keeps a child whose end the source took, and starts its own for a child the source still waits for', async () => {
    const ledger = await setup();
    await app.client.start(Family, null, { id: 'fam' });
    await app.worker.drain();
    expect((await app.client.getStatus('fam')).status).toBe('suspended');
    ledger.log = [];

    await app.client.fork('fam', { fromStep: 'middle', id: 'fam2' });
    await app.worker.drain();
    // "early" ended into the source before the fork point: kept. "late" had not: the fork starts its own.
    expect(ledger.log).toEqual(['kid fam2/late']);
    const fork = await app.client.getStatus('fam2', { children: true });
    expect(fork.children!.map((c) => [c.id, c.parentId])).toEqual([['fam2/late', 'fam2']]);
    await app.client.signal(approval, 'go', { key: 'fam2/late' });
    await app.worker.drain();
    expect(await app.client.getStatus('fam2')).toMatchObject({
      status: 'completed',
      output: ['done fam/early', 'done fam2/late'],
    });
    expect((await app.client.getStatus('fam')).status).toBe('suspended');
  });

  it('refuses an unknown step, and a bad option, with nothing stored', async () => {
    await setup();
    await app.client.start(Order, { n: 5 }, { id: 'src' });
    await app.worker.drain();
    await expect(app.client.fork('src', { fromStep: 'nope', id: 'f' })).rejects.toThrow(
      /has no step "nope".*"charge", "first"/,
    );
    await expect(app.client.fork('src', { fromStep: '$compensate:charge', id: 'f' })).rejects.toThrow(/no step/);
    await expect(app.client.fork('src', { version: 0, id: 'f' })).rejects.toThrow(/"version"/);
    await expect(app.client.fork('src', { bogus: 1 } as never)).rejects.toThrow(/bogus/);
    await expect(app.client.fork('missing')).rejects.toThrow(/No workflow instance has the id "missing"/);
    expect((await app.client.list()).map((i) => i.id)).toEqual(['src']);

    // Without fromStep: from the top, whatever the source's status.
    await app.client.fork('src', { id: 'top' });
    expect(await app.client.getStatus('top', { journal: true })).toMatchObject({
      forkedFrom: { id: 'src', step: null },
      journal: [],
      status: 'pending',
    });
  });
});
