import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_JOURNAL_LIMITS } from '../../src/engine/journal-limits.js';
import { DEFAULT_RETRY } from '../../src/engine/retry-policy.js';
import type { WorkflowContext } from '../../src/engine/workflow-context.js';
import { WorkflowEngine, type EngineRegistry, type RunnableWorkflow } from '../../src/engine/workflow-engine.js';
import { WorkflowRuntime } from '../../src/runtime/workflow-runtime.js';
import { WorkflowWakeUps } from '../../src/runtime/workflow-wake-ups.js';
import { WorkflowStorage } from '../../src/storage/workflow-storage.js';
import { ManualWorkflowClock } from '../../src/time/manual-workflow-clock.js';
import { requirePostgres, usePostgresStore } from '../support/postgres.js';

// What the engine stores on PostgreSQL from values a workflow gives it: durations as numbers with
// a fraction (a computed 1.5 ms, a backoff of 2.5) become whole milliseconds, which a bigint
// column keeps; a NUL character, which PostgreSQL can't read out of JSON, never reaches a write.
const available = await requirePostgres('engine values on PostgreSQL');
const T0 = Date.UTC(2026, 0, 1);

type Body = (ctx: WorkflowContext, input: unknown) => Promise<unknown>;

describe.skipIf(!available)('values the engine stores, on PostgreSQL', () => {
  const fixture = usePostgresStore('values', { beforeAll, afterAll });

  function core(clock: ManualWorkflowClock, workflows: Record<string, Body>) {
    const storage = new WorkflowStorage(fixture.store);
    const logs: string[] = [];
    const logger = { warn: (message: string) => logs.push(message), error: (message: string) => logs.push(message) };
    const wakeUps = new WorkflowWakeUps();
    const runnable = new Map<string, RunnableWorkflow>(
      Object.entries(workflows).map(([name, run]) => [
        name,
        { name, version: 1, instance: { run }, retry: DEFAULT_RETRY },
      ]),
    );
    const registry: EngineRegistry = {
      get: (name, version) => (version === 1 ? runnable.get(name) : undefined),
      versions: () => [...runnable.keys()].map((name) => ({ name, version: 1 })),
      limits: () => [],
      rateLimits: () => [],
      resolveChild: () => {
        throw new Error('no children here');
      },
    };
    const engine = new WorkflowEngine({
      storage,
      registry,
      clock,
      journalLimits: DEFAULT_JOURNAL_LIMITS,
      logger,
      emit: () => undefined,
      kick: () => wakeUps.kick(),
    });
    const worker = {
      enabled: false,
      id: 'worker-1',
      concurrency: 4,
      pollInterval: 1_000,
      leaseDuration: 30_000,
      heartbeatInterval: 10_000,
      shutdownTimeout: 1_000,
    };
    const runtime = new WorkflowRuntime({
      engine,
      storage,
      registry: { isLimited: () => false },
      wakeUps,
      clock,
      worker,
      logger,
    });
    const start = (id: string, workflow: string) =>
      storage.create({ id, workflow, version: 1, input: null, deadline: null, now: clock.now() });
    return { storage, runtime, logs, start };
  }

  it('a sleep, a sleepUntil, a signal wait timeout and a step retry with a fraction of a millisecond suspend and resume', async () => {
    const clock = new ManualWorkflowClock(T0);
    let failures = 0;
    const { runtime, storage, start, logs } = core(clock, {
      fractions: async (ctx) => {
        await ctx.sleep('nap', 1.5);
        await ctx.sleepUntil('until', T0 + 20.5);
        const signal = await ctx.waitForSignal('wait', 'never', { timeout: 0.5 }).catch(() => 'timed out');
        const step = await ctx.step(
          'flaky',
          () => {
            if (failures++ === 0) throw new Error('once');
            return 'ok';
          },
          { retry: { attempts: 2, backoff: 2.5, maxBackoff: 3.5 } },
        );
        return { signal, step };
      },
    });
    await start('f-1', 'fractions');
    for (let round = 0; round < 6; round++) {
      await runtime.drain();
      clock.advance(10);
    }
    expect(logs).toEqual([]);
    const done = await storage.get('f-1');
    expect(done?.status).toBe('completed');
    expect(done?.output).toEqual({ signal: 'timed out', step: 'ok' });
  });

  it('a step failing with a NUL character in its message, or returning one, fails as it should (and the instance ends)', async () => {
    const clock = new ManualWorkflowClock(T0);
    const { runtime, storage, start, logs } = core(clock, {
      throws: async (ctx) => {
        const caught = await ctx
          .step(
            'read',
            () => {
              throw new Error('bad byte \u0000 in input');
            },
            { retry: false },
          )
          .catch((error: Error) => error.message);
        return { caught };
      },
      returns: async (ctx) => ctx.step('binary', () => 'a\u0000b', { retry: false }),
    });
    await start('n-1', 'throws');
    await start('n-2', 'returns');
    for (let round = 0; round < 3; round++) {
      await runtime.drain();
      clock.advance(10);
    }
    // The failure is reported; no write failed in the store.
    expect(logs.filter((line) => /store failed/.test(line))).toEqual([]);
    expect((await storage.get('n-1'))?.output).toEqual({ caught: 'bad byte \ufffd in input' });
    const failed = await storage.get('n-2');
    expect(failed?.status).toBe('failed');
    expect(failed?.error?.message).toMatch(/The result of step "binary".*NUL character/);
  });
});
