// The @nestjs/terminus health indicator on a real Nest app: up with its details; down when the
// store does not answer (PostgreSQL with its pool ended), when the worker loop stopped or is stuck,
// and when the due backlog passes its threshold; and through terminus's HealthCheckService.
import { Controller, Get, Module, ServiceUnavailableException, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { afterEach, describe, expect, it } from 'vitest';
import { WorkflowsHealthIndicator } from '../../src/health/index.js';
import {
  InMemoryWorkflowStore,
  Workflow,
  WorkflowClient,
  WorkflowsModule,
  WorkflowWorker,
  type WorkflowContext,
  type WorkflowDefinition,
  type WorkflowStore,
  type WorkflowsModuleOptions,
} from '../../src/index.js';
import { fromPg, PostgresWorkflowStore } from '../../src/postgres/index.js';
import { ManualWorkflowClock } from '../../src/time/manual-workflow-clock.js';
import { createPool, dropSchema, freshSchemaName, requirePostgres } from '../support/postgres.js';

@Workflow('health.noop')
class Noop implements WorkflowDefinition<null, null> {
  async run(_ctx: WorkflowContext) {
    return null;
  }
}

@Controller('health')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly workflows: WorkflowsHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.workflows.isHealthy({ maxDueBacklog: 3 })]);
  }
}

let app: INestApplicationContext | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function boot(options: WorkflowsModuleOptions) {
  @Module({
    imports: [TerminusModule, WorkflowsModule.forRoot(options)],
    controllers: [HealthController],
    providers: [Noop, WorkflowsHealthIndicator],
  })
  class HealthApp {}
  app = await NestFactory.createApplicationContext(HealthApp, { logger: false });
  return {
    indicator: app.get(WorkflowsHealthIndicator),
    controller: app.get(HealthController),
    client: app.get(WorkflowClient),
    worker: app.get(WorkflowWorker),
  };
}

const until = async (what: () => boolean) => {
  for (let i = 0; i < 200 && !what(); i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(what()).toBe(true);
};

describe('WorkflowsHealthIndicator', () => {
  it('is up with the store, the worker loop and the backlog in its details; terminus reports ok', async () => {
    const clock = new ManualWorkflowClock(new Date('2026-05-01T00:00:00Z'));
    const { indicator, controller, worker } = await boot({ store: new InMemoryWorkflowStore(), clock });
    await until(() => worker.loopStatus().lastClaimAt !== null);
    const result = await indicator.isHealthy();
    expect(result).toEqual({
      workflows: {
        status: 'up',
        store: { status: 'up', responseTimeMs: expect.any(Number) },
        dueBacklog: 0,
        worker: { status: 'up', running: true, executing: 0, lastClaimAt: '2026-05-01T00:00:00.000Z' },
      },
    });
    expect(await controller.check()).toMatchObject({ status: 'ok', info: { workflows: { status: 'up' } } });
  });

  it('is down when the due backlog passes the threshold (here no worker runs), and terminus answers 503', async () => {
    const { indicator, controller, client } = await boot({ store: new InMemoryWorkflowStore(), worker: false });
    for (let i = 0; i < 3; i += 1) await client.start(Noop, null, { id: `n-${i}` });
    expect((await indicator.isHealthy({ maxDueBacklog: 3 })).workflows).toMatchObject({
      status: 'up',
      dueBacklog: 3,
      worker: { status: 'disabled' },
    });
    await client.start(Noop, null, { id: 'n-3' });
    const down = await indicator.isHealthy({ maxDueBacklog: 3 });
    expect(down.workflows).toMatchObject({
      status: 'down',
      dueBacklog: 'more than 3',
      message: 'more than 3 instances are due and unclaimed.',
    });
    expect((await indicator.isHealthy({ maxDueBacklog: false })).workflows.status).toBe('up');
    const error = await controller.check().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceUnavailableException);
    expect((error as ServiceUnavailableException).getResponse()).toMatchObject({
      status: 'error',
      error: { workflows: { status: 'down' } },
    });
  });

  it('shows, staying up, the instances of versions this process does not declare that its last idle look found', async () => {
    const clock = new ManualWorkflowClock(new Date('2026-05-01T00:00:00Z'));
    const store = new InMemoryWorkflowStore();
    const { indicator, worker } = await boot({ store, clock, worker: false });
    await store.create({
      id: 'orphan',
      workflow: 'health.noop',
      version: 9,
      input: null,
      deadline: null,
      now: clock.now(),
    });
    await worker.drain(); // looks, but the instance has not been due past the grace period (90 s) yet
    expect((await indicator.isHealthy()).workflows).not.toHaveProperty('undeclaredDue');
    clock.advance('2m');
    expect(await worker.drain()).toBe(0);
    expect((await indicator.isHealthy()).workflows).toMatchObject({
      status: 'up',
      dueBacklog: 1,
      undeclaredDue: [{ workflow: 'health.noop', version: 9, count: 1 }],
    });
  });

  it('is down when the worker loop has stopped, or is stuck in a claim with free slots', async () => {
    const clock = new ManualWorkflowClock(new Date('2026-05-01T00:00:00Z'));
    const inner = new InMemoryWorkflowStore();
    let hang = false;
    const hung: Array<() => void> = [];
    // A store whose claims stop answering (a stuck connection) while `hang` is set.
    const store = new Proxy(inner, {
      get(target, property, receiver) {
        if (property === 'claim') {
          return (...args: Parameters<WorkflowStore['claim']>) =>
            hang
              ? new Promise<void>((resolve) => hung.push(resolve)).then(() => target.claim(...args))
              : target.claim(...args);
        }
        const value = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const { indicator, worker } = await boot({ store, clock, worker: { pollInterval: '10s' } });
    await until(() => worker.loopStatus().lastClaimAt !== null);
    hang = true;
    clock.advance('20s'); // wakes the loop, whose claim now hangs
    expect((await indicator.isHealthy()).workflows.status).toBe('up'); // 20 s < 30 s
    clock.advance('20s');
    const stuck = (await indicator.isHealthy()).workflows;
    expect(stuck).toMatchObject({
      status: 'down',
      message: 'the worker loop last claimed 40 s ago.',
      worker: { running: true, executing: 0 },
    });
    expect((await indicator.isHealthy({ maxClaimAge: '1m' })).workflows.status).toBe('up');
    expect((await indicator.isHealthy({ maxClaimAge: false })).workflows.status).toBe('up');
    hang = false;
    for (const answer of hung.splice(0)) answer();
    await until(() => worker.loopStatus().lastClaimAt === clock.now());
    expect((await indicator.isHealthy()).workflows.status).toBe('up');
    await worker.beforeApplicationShutdown();
    expect((await indicator.isHealthy({ maxClaimAge: '1h' })).workflows).toMatchObject({
      status: 'down',
      message: 'the worker loop is not running.',
    });
  });

  it('is down when the store does not answer (PostgreSQL, its pool ended)', async () => {
    if (!(await requirePostgres('health indicator'))) return;
    const pool = createPool({ max: 2 });
    const schema = freshSchemaName('health');
    try {
      const { indicator } = await boot({
        store: new PostgresWorkflowStore({ executor: fromPg(pool), schema }),
        worker: false,
      });
      expect((await indicator.isHealthy()).workflows).toMatchObject({
        status: 'up',
        store: { status: 'up' },
        dueBacklog: 0,
      });
      await dropSchema(pool, schema);
      await pool.end();
      const down = (await indicator.isHealthy()).workflows;
      expect(down).toMatchObject({
        status: 'down',
        store: { status: 'down', error: expect.any(String) },
        message: 'the store did not answer.',
      });
    } finally {
      await app?.close().catch(() => undefined);
      app = undefined;
      if (!pool.ended) {
        await dropSchema(pool, schema).catch(() => undefined);
        await pool.end();
      }
    }
  });
});
