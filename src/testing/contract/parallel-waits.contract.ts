import { randomUUID } from 'node:crypto';
import { Workflow } from '../../decorators/workflow.decorator.js';
import type { WorkflowContext } from '../../engine/workflow-context.js';
import { WorkflowSignal } from '../../signals/workflow-signal.js';
import type { WorkflowStore } from '../../storage/workflow-store.js';
import { runWorkflowName } from '../store-fixtures.js';
import { contractEngines } from './contract-engine.js';
import type { ContractSuite } from './contract-suite.js';

const vote = new WorkflowSignal<{ by: string }>('parallel-waits.vote');
const ready = new WorkflowSignal<null>('parallel-waits.ready');

/** Two waits of one name and key, read together once `ready` came: `first` was called first. */
@Workflow(runWorkflowName('parallel-waits.two'))
class TwoVotes {
  async run(ctx: WorkflowContext, key: string) {
    await ctx.waitForSignal('ready', ready, { key });
    const [first, second] = await Promise.all([
      ctx.waitForSignal('first', vote, { key }),
      ctx.waitForSignal('second', vote, { key }),
    ]);
    return [first.by, second.by];
  }
}

/**
 * Holds the first read of `vote` signals with `key` until the second one has answered, so the
 * second wait hears from the store first.
 */
function answerSecondReadFirst(store: WorkflowStore, key: string, onEnd: (undo: () => void) => void): void {
  const original = store.signals;
  let secondAnswered!: () => void;
  const answered = new Promise<void>((resolve) => (secondAnswered = resolve));
  let reads = 0;
  store.signals = async function (this: WorkflowStore, query) {
    if (query.name !== vote.name || query.key !== key) return original.call(this, query);
    if (++reads === 1) {
      await answered;
      return original.call(this, query);
    }
    const records = await original.call(this, query);
    secondAnswered();
    return records;
  };
  onEnd(() => (store.signals = original));
}

/**
 * Waits of one signal name and key that read at once (`Promise.all`) take the signals in the order
 * they were called, not in the order the store answers their reads: on a pool, two reads go on two
 * connections and may answer in either order.
 */
export function parallelWaitsContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('parallel waits of one signal name and key', () => {
    const engines = contractEngines(suite);

    it('two parallel waits of one name and key take the two signals in call order when the later wait hears from the store first', async () => {
      const { client, drain } = engines.open({ workflows: [TwoVotes] });
      const key = randomUUID();
      const handle = await client.start(TwoVotes, key);
      await drain();
      await client.signal(vote, { by: 'ann' }, { key });
      await client.signal(vote, { by: 'bob' }, { key });
      answerSecondReadFirst(suite.store, key, engines.onEnd);
      await client.signal(ready, null, { key });
      await drain();
      expect(await handle.result({ timeout: 1_000 })).toEqual(['ann', 'bob']);
    });

    it('two parallel waits of one name and key, one signal per execution: each takes its own, in order', async () => {
      const { client, drain } = engines.open({ workflows: [TwoVotes] });
      const key = randomUUID();
      const handle = await client.start(TwoVotes, key);
      await client.signal(ready, null, { key });
      await drain();
      expect((await handle.status()).waits).toEqual([{ name: vote.name, key }]);
      await client.signal(vote, { by: 'ann' }, { key });
      answerSecondReadFirst(suite.store, key, engines.onEnd);
      await drain();
      const { journal } = await handle.status({ journal: true });
      expect(journal!.filter((entry) => entry.kind === 'signal').map((entry) => [entry.name, entry.state])).toEqual([
        ['ready', 'completed'],
        ['first', 'completed'],
        ['second', 'waiting'],
      ]);
      await client.signal(vote, { by: 'bob' }, { key });
      await drain();
      expect(await handle.result({ timeout: 1_000 })).toEqual(['ann', 'bob']);
    });
  });
}
