// handle.result() across processes on MariaDB: MySQL has no NOTIFY, so the store polls the instances
// this process waits for (MySqlEndPoller) and wakes their result() as soon as one ended, instead of
// leaving each wait to read its instance every 500 ms.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Workflow, type WorkflowContext, type WorkflowDefinition } from '../../src/index.js';
import { fromMysql2, MySqlWorkflowStore } from '../../src/mysql/index.js';
import type { SqlExecutor } from '../../src/sql/sql-executor.js';
import { lease, newInstance } from '../../src/testing/store-fixtures.js';
import { requireMysql, useMysqlStore } from '../support/mysql.js';
import { createTestApp, type TestApp } from '../support/nest-test-app.js';

const available = await requireMysql('end poll');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

@Workflow('endpoll.quick')
class Quick implements WorkflowDefinition<number, number> {
  async run(ctx: WorkflowContext, n: number) {
    return ctx.step('double', () => n * 2);
  }
}

/** `executor`, counting the statements whose text matches `pattern`. */
function counting(executor: SqlExecutor, pattern: RegExp, counter: { n: number }): SqlExecutor {
  return {
    query: (sql, params) => {
      if (pattern.test(sql)) counter.n++;
      return executor.query(sql, params);
    },
    transaction: (fn) => executor.transaction((tx) => fn(counting(tx, pattern, counter))),
  };
}

describe.skipIf(!available)('MySQL end poll', () => {
  const fixture = useMysqlStore('ends', { beforeAll, afterAll });
  const apps: TestApp[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
  });

  it('calls a listener with its instance id once that instance ended, and polls only while someone waits', async () => {
    const polls = { n: 0 };
    const store = new MySqlWorkflowStore({
      executor: counting(fromMysql2(fixture.pool), /AND status IN \('completed'/, polls),
      schema: fixture.schema,
      endPoll: { minDelay: 5, maxDelay: 20 },
    });
    const writer = fixture.store;
    const a = await lease(writer, newInstance('ends-a', 'endpoll.w'));
    await lease(writer, newInstance('ends-b', 'endpoll.w'));
    const heard: Array<string | null> = [];
    const never: Array<string | null> = [];
    const stopAll = await store.listenForEnds((id) => never.push(id));
    const stop = await store.listenForEnds((id) => heard.push(id), 'ends-a');
    const stopB = await store.listenForEnds((id) => heard.push(id), 'ends-b');
    await sleep(100);
    expect(heard).toEqual([]);
    const endedAt = Date.now();
    await writer.write('ends-a', a.token, {
      now: 1,
      entries: [],
      status: 'completed',
      output: 1,
      release: { wakeAt: null, waits: [], signalCursor: a.cursor },
    });
    while (heard.length === 0 && Date.now() - endedAt < 5_000) await sleep(2);
    expect(heard[0]).toBe('ends-a');
    expect(Date.now() - endedAt).toBeLessThan(1_000);
    await stop();
    await stopB();
    const after = polls.n;
    await sleep(150);
    expect(polls.n).toBe(after); // nobody waits: nothing is read
    expect(new Set(heard)).toEqual(new Set(['ends-a']));
    expect(never).toEqual([]); // without an id there is nothing to ask about
    // close() drops every listener; the store can be used again (an application started again).
    const dropped: Array<string | null> = [];
    await store.listenForEnds((id) => dropped.push(id), 'ends-a');
    await store.close();
    const again: Array<string | null> = [];
    await store.listenForEnds((id) => again.push(id), 'ends-a');
    while (again.length === 0 && Date.now() - endedAt < 5_000) await sleep(2);
    expect(again[0]).toBe('ends-a');
    expect(dropped).toEqual([]);
    await stopAll();
    await store.close();
  });

  it("wakes a result() waiting in another application once the instance ends there, before the wait's own poll", async () => {
    const reads = { n: 0 };
    const waiterStore = new MySqlWorkflowStore({
      executor: counting(fromMysql2(fixture.pool), /wait_topics FROM .* WHERE id = \?$/, reads),
      schema: fixture.schema,
    });
    // The waiter's own poll is 30 s: only the store's end poll can wake it in time.
    const waiter = await createTestApp([Quick], {
      store: waiterStore,
      worker: { enabled: false, pollInterval: '30s' },
    });
    const runner = await createTestApp([Quick], {
      store: new MySqlWorkflowStore({ executor: fromMysql2(fixture.pool), schema: fixture.schema }),
    });
    apps.push(waiter, runner);
    const handle = await waiter.client.start(Quick, 21, { id: 'ends-app' });
    let resolvedAt = 0;
    const result = handle.result({ timeout: '20s' }).then((output) => ((resolvedAt = Date.now()), output));
    await sleep(100);
    reads.n = 0;
    await sleep(1_200); // more than twice the 500 ms a wait polls at when its store can't notify
    expect(reads.n).toBe(0); // the wait itself reads nothing: the store's poll asks for it
    expect(await runner.worker.drain()).toBe(1);
    const endedAt = Date.now();
    expect(await result).toBe(42);
    expect(resolvedAt - endedAt).toBeLessThan(1_000);
    expect(reads.n).toBe(1); // one read, after the end
  });

  it('refuses a poll interval that is not { minDelay, maxDelay } with 1 <= minDelay <= maxDelay', () => {
    const executor = fromMysql2(fixture.pool);
    expect(() => new MySqlWorkflowStore({ executor, endPoll: { minDelay: 0, maxDelay: 10 } })).toThrow(
      /invalid `endPoll`.*1 <= minDelay <= maxDelay/,
    );
    expect(() => new MySqlWorkflowStore({ executor, wakePoll: { minDelay: 50, maxDelay: 10 } })).toThrow(
      /invalid `wakePoll`/,
    );
    expect(() => new MySqlWorkflowStore({ executor, endPoll: 5 as never })).toThrow(TypeError);
  });
});
