// Real Nest applications (NestFactory, not a testing module) with the background worker on and
// the system clock: what a user's app does at startup, while running, and at shutdown.
import { Inject, Injectable, Module, type INestApplicationContext, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  InMemoryWorkflowStore,
  Workflow,
  WorkflowClient,
  WorkflowEvents,
  WorkflowSignal,
  WorkflowsModule,
  WorkflowWorker,
  type WorkflowContext,
  type WorkflowDefinition,
  type WorkflowEvent,
  type WorkflowsModuleOptions,
  type WorkflowsOptionsFactory,
} from '@nestjs/workflows';
import { afterEach, describe, expect, it, vi } from 'vitest';

// ---- the application under test ----

const go = new WorkflowSignal<{ bonus: number }>('e2e.go');

/** A service with state, injected into the workflow by type: proves constructor injection. */
@Injectable()
class Inventory {
  readonly attempts = new Map<number, number>();
  reserve(n: number): string {
    const attempt = (this.attempts.get(n) ?? 0) + 1;
    this.attempts.set(n, attempt);
    // Odd orders fail their first attempt: the durable retry must carry them through.
    if (n % 2 === 1 && attempt === 1) throw new Error(`warehouse busy for ${n}`);
    return `res-${n}`;
  }
}

interface ReserveOutput {
  n: number;
  reservation: string;
  bonus: number;
  total: number;
}

@Workflow('e2e.reserve', { timeout: '30s' })
class Reserve implements WorkflowDefinition<{ n: number }, ReserveOutput> {
  constructor(private readonly inventory: Inventory) {}

  async run(ctx: WorkflowContext, input: { n: number }): Promise<ReserveOutput> {
    const reservation = await ctx.step('reserve', () => this.inventory.reserve(input.n), {
      retry: { attempts: 3, backoff: '20ms' },
    });
    await ctx.sleep('settle', '20ms');
    const { bonus } = await ctx.waitForSignal('go', go, { key: String(input.n), timeout: '10s' });
    const total = await ctx.step('total', () => input.n * 10 + bonus);
    ctx.setStatus({ done: true });
    return { n: input.n, reservation, bonus, total };
  }
}

/** A user's own service that starts workflows through the injected client. */
@Injectable()
class OrdersFacade {
  constructor(private readonly workflows: WorkflowClient) {}

  place(n: number) {
    return this.workflows.start(Reserve, { n }, { id: `order-${n}` });
  }

  release(n: number) {
    return this.workflows.signal(go, { bonus: n }, { key: String(n) });
  }
}

@Module({
  imports: [WorkflowsModule.forRoot({ worker: { pollInterval: '10ms' } })],
  providers: [Inventory, Reserve, OrdersFacade],
})
class AppModule {}

// ---- configuration from another module (forRootAsync) ----

const WORKFLOWS_CONFIG = Symbol('WORKFLOWS_CONFIG');

interface WorkflowsConfig {
  workerId: string;
  pollInterval: string;
  store: InMemoryWorkflowStore;
}

/** Stands in for a ConfigModule: provides settings under a token, made fresh for each app. */
@Module({
  providers: [
    {
      provide: WORKFLOWS_CONFIG,
      useFactory: (): WorkflowsConfig => ({
        workerId: 'config-worker',
        pollInterval: '10ms',
        store: new InMemoryWorkflowStore(),
      }),
    },
  ],
  exports: [WORKFLOWS_CONFIG],
})
class ConfigLikeModule {}

@Workflow('e2e.echo')
class Echo implements WorkflowDefinition<string, string> {
  async run(ctx: WorkflowContext, input: string): Promise<string> {
    const value = await ctx.step('echo', () => input.toUpperCase());
    await ctx.sleep('pause', '10ms');
    return value;
  }
}

const factory = vi.fn((config: WorkflowsConfig): WorkflowsModuleOptions => ({
  store: config.store,
  worker: { id: config.workerId, pollInterval: config.pollInterval },
}));

@Module({
  imports: [
    WorkflowsModule.forRootAsync({ imports: [ConfigLikeModule], inject: [WORKFLOWS_CONFIG], useFactory: factory }),
  ],
  providers: [Echo],
})
class AsyncFactoryModule {}

@Injectable()
class WorkflowsConfigService implements WorkflowsOptionsFactory {
  constructor(@Inject(WORKFLOWS_CONFIG) private readonly config: WorkflowsConfig) {}

  createWorkflowsOptions(): WorkflowsModuleOptions {
    return {
      store: this.config.store,
      worker: { id: `${this.config.workerId}-from-class`, pollInterval: this.config.pollInterval },
    };
  }
}

@Module({
  imports: [WorkflowsModule.forRootAsync({ imports: [ConfigLikeModule], useClass: WorkflowsConfigService })],
  providers: [Echo],
})
class AsyncClassModule {}

// ---- every app a test opens must be closed by that test ----

const opened: Array<{ app: INestApplicationContext; closed: boolean }> = [];

async function boot(module: Type): Promise<INestApplicationContext> {
  const app = await NestFactory.createApplicationContext(module, { logger: false });
  const entry = { app, closed: false };
  const close = app.close.bind(app);
  app.close = async () => {
    entry.closed = true;
    await close();
  };
  opened.push(entry);
  return app;
}

afterEach(async () => {
  const leaked = opened.filter((entry) => !entry.closed);
  opened.length = 0;
  // Close them anyway, so one leaking test doesn't leave a worker polling under the next.
  for (const entry of leaked) await entry.app.close();
  expect(
    leaked.length,
    'the test left Nest application(s) open (and their workers running): call app.close() in the test',
  ).toBe(0);
});

// ---- the tests ----

describe('a real Nest application with the background worker', () => {
  it('runs 20 instances started through an injected client to completion, retries and signals included', async () => {
    const app = await boot(AppModule);
    const orders = app.get(OrdersFacade);
    const events: WorkflowEvent[] = [];
    const subscription = app.get(WorkflowEvents).subscribe((event) => events.push(event));
    const numbers = Array.from({ length: 20 }, (_, i) => i + 1);

    const handles = await Promise.all(numbers.map((n) => orders.place(n)));
    // Sent right after the starts, usually before the instances reach their waits: not lost.
    await Promise.all(numbers.map((n) => orders.release(n)));
    const outputs = await Promise.all(handles.map((handle) => handle.result({ timeout: '10s' })));

    expect(outputs).toEqual(numbers.map((n) => ({ n, reservation: `res-${n}`, bonus: n, total: n * 11 })));
    const inventory = app.get(Inventory);
    for (const n of numbers)
      expect(inventory.attempts.get(n), `reserve attempts of order ${n}`).toBe(n % 2 === 1 ? 2 : 1);
    const client = app.get(WorkflowClient);
    const finished = await client.list({ workflow: 'e2e.reserve', limit: 1000 });
    expect(finished).toHaveLength(20);
    expect(
      finished.every(
        (instance) => instance.status === 'completed' && (instance.customStatus as { done?: boolean }).done === true,
      ),
    ).toBe(true);
    expect(events.filter((e) => e.type === 'workflow-completed')).toHaveLength(20);
    expect(events.filter((e) => e.type === 'step-retrying')).toHaveLength(10);
    expect(events.filter((e) => e.type === 'workflow-failed')).toHaveLength(0);

    subscription.unsubscribe();
    await app.close();
  });

  it('takes its options from forRootAsync({ imports, inject, useFactory })', async () => {
    factory.mockClear();
    const app = await boot(AsyncFactoryModule);
    const config = app.get<WorkflowsConfig>(WORKFLOWS_CONFIG);
    expect(factory).toHaveBeenCalledTimes(1);
    expect(factory).toHaveBeenCalledWith(config);
    expect(app.get(WorkflowWorker).id).toBe('config-worker');

    const handle = await app.get(WorkflowClient).start(Echo, 'hello', { id: 'echo-factory' });
    expect(await handle.result({ timeout: '10s' })).toBe('HELLO');
    // The instance lives in the store the configuration provided.
    expect((await config.store.get('echo-factory'))?.status).toBe('completed');
    await app.close();
  });

  it('takes its options from forRootAsync({ imports, useClass }) with the class injected from the imports', async () => {
    const app = await boot(AsyncClassModule);
    const config = app.get<WorkflowsConfig>(WORKFLOWS_CONFIG);
    expect(app.get(WorkflowWorker).id).toBe('config-worker-from-class');

    const handle = await app.get(WorkflowClient).start(Echo, 'class', { id: 'echo-class' });
    expect(await handle.result({ timeout: '10s' })).toBe('CLASS');
    expect((await config.store.get('echo-class'))?.status).toBe('completed');
    await app.close();
  });
});
