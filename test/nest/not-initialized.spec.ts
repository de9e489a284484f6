import { afterEach, describe, expect, it } from 'vitest';
import { Test, type TestingModule } from '@nestjs/testing';
import {
  UnknownWorkflowError,
  Workflow,
  WorkflowClient,
  WorkflowInvalidStateError,
  WorkflowSchedules,
  WorkflowsModule,
  WorkflowWorker,
  type WorkflowContext,
} from '../../src/index.js';
import { ManualWorkflowClock } from '../../src/time/manual-workflow-clock.js';

@Workflow('greetings.before-init')
class Greet {
  async run(ctx: WorkflowContext, input: { to: string }) {
    return ctx.step('send', () => `hello ${input.to}`);
  }
}

// A testing module compiled but not initialized: the @Workflow providers exist, but the module has
// not collected them yet (that happens in onModuleInit). The error must say so, not that the class
// is missing from the providers, which would send the reader looking in the wrong place.
describe('calls before the application is initialized', () => {
  let module: TestingModule | undefined;
  afterEach(async () => {
    await module?.close();
    module = undefined;
  });

  async function compile(): Promise<TestingModule> {
    module = await Test.createTestingModule({
      imports: [
        WorkflowsModule.forRoot({ clock: new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z')), worker: false }),
      ],
      providers: [Greet],
    }).compile();
    return module;
  }

  it('start() says to call init(), not to add a provider that is there', async () => {
    const app = await compile();
    const error = await app
      .get(WorkflowClient)
      .start(Greet, { to: 'ada' })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(UnknownWorkflowError);
    expect((error as Error).message).toMatch(/has not been initialized.*app\.init\(\)/);
    expect((error as Error).message).not.toMatch(/is not a provider/);
    const byName = await app
      .get(WorkflowClient)
      .start('greetings.before-init', { to: 'ada' })
      .catch((caught: unknown) => caught);
    expect((byName as Error).message).toMatch(/has not been initialized.*app\.init\(\)/);
    const schedule = await app
      .get(WorkflowSchedules)
      .upsert('greet.every', { workflow: Greet, every: '1m', input: { to: 'ada' } })
      .catch((caught: unknown) => caught);
    expect((schedule as Error).message).toMatch(/has not been initialized.*app\.init\(\)/);
  });

  it('drain() fails instead of finding nothing to run', async () => {
    const app = await compile();
    const error = await app
      .get(WorkflowWorker)
      .drain()
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(WorkflowInvalidStateError);
    expect((error as Error).message).toMatch(/drain\(\).*has not been initialized.*app\.init\(\)/);
  });

  it('works once initialized, and a class missing from the providers is still named as such', async () => {
    const app = await compile();
    await app.init();
    const handle = await app.get(WorkflowClient).start(Greet, { to: 'ada' });
    expect(await app.get(WorkflowWorker).drain()).toBe(1);
    await expect(handle.result()).resolves.toBe('hello ada');

    @Workflow('greetings.unlisted')
    class Unlisted {
      async run() {
        return null;
      }
    }
    await expect(app.get(WorkflowClient).start(Unlisted, null)).rejects.toThrow(
      /is not a provider of this application/,
    );
  });
});
