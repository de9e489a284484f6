// Payload codecs where Nest takes part: a codec given as a class is created by the module (so it
// can inject what holds its key), and declared schedules are saved at startup under the new key.
import { randomBytes } from 'node:crypto';
import { Test, type TestingModule } from '@nestjs/testing';
import { afterEach, describe, expect, it } from 'vitest';
import {
  AesGcmPayloadCodec,
  InMemoryWorkflowStore,
  Workflow,
  WorkflowClient,
  WorkflowStorage,
  WorkflowsModule,
  WorkflowWorker,
  type WorkflowContext,
  type WorkflowsModuleOptions,
  type WorkflowStore,
} from '../../src/index.js';
import { ENCRYPTION_WORKFLOWS, MARK } from '../../src/testing/contract/encryption.contract.js';
import { ManualWorkflowClock } from '../../src/time/manual-workflow-clock.js';

const k1 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'k1' });
const k2 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'k2' });

interface EncryptionApp {
  module: TestingModule;
  client: WorkflowClient;
  worker: WorkflowWorker;
  storage: WorkflowStorage;
  close(): Promise<void>;
}

const apps: EncryptionApp[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

/** A Nest app on `store` with the given codec options, no background worker, and `clock`. */
async function encryptionApp(
  store: WorkflowStore,
  clock: ManualWorkflowClock,
  options: WorkflowsModuleOptions = {},
  extra: Array<new (...args: never[]) => unknown> = [],
): Promise<EncryptionApp> {
  const module = await Test.createTestingModule({
    imports: [WorkflowsModule.forRoot({ store, clock, worker: false, ...options })],
    providers: [...ENCRYPTION_WORKFLOWS, ...extra],
  }).compile();
  await module.init();
  return {
    module,
    client: module.get(WorkflowClient),
    worker: module.get(WorkflowWorker),
    storage: module.get(WorkflowStorage),
    close: () => module.close(),
  };
}

describe('codec options', () => {
  const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
  const boot = async (options: WorkflowsModuleOptions) => {
    const app = await encryptionApp(new InMemoryWorkflowStore(), clock, options);
    apps.push(app);
    return app;
  };

  it('creates a codec given as a class through Nest, so it can inject what holds its key', async () => {
    class EnvCodec extends AesGcmPayloadCodec {
      constructor() {
        super({ key: Buffer.alloc(32, 7), id: 'env' });
      }
    }
    const app = await boot({ codec: EnvCodec });
    expect(app.storage.codecs?.current.id).toBe('env');
  });
});

@Workflow('enc.declared', {
  schedules: [{ id: 'declared-nightly', every: '1d', input: { report: `${MARK}-declared` } }],
})
class EncDeclared {
  async run(_ctx: WorkflowContext, input: unknown) {
    return input;
  }
}

describe('declared schedules under a removed key', () => {
  it('startup does not fail: the declared schedule, from the code, replaces what no codec can read; run-time reads still refuse', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const first = await encryptionApp(store, clock, { codec: k1 }, [EncDeclared]);
    expect(String((await store.getSchedule('declared-nightly'))!.input)).toMatch(/^\$wfc1:k1:/);
    await first.close();

    const second = await encryptionApp(store, clock, { codec: k2 }, [EncDeclared]);
    apps.push(second);
    expect(String((await store.getSchedule('declared-nightly'))!.input)).toMatch(/^\$wfc1:k2:/);
    expect((await second.storage.schedules.getSchedule('declared-nightly'))?.input).toEqual({
      report: `${MARK}-declared`,
    });
    clock.advance('1d');
    await second.worker.drain();
    expect((await second.client.list({ scheduleId: 'declared-nightly' }))[0]).toMatchObject({
      status: 'completed',
      output: { report: `${MARK}-declared` },
    });

    // A run-time schedule under the removed key: reading it for a change refuses, and nothing is lost.
    await second.storage.schedules.saveSchedule({
      id: 'runtime',
      workflow: 'enc.declared',
      declared: false,
      spec: { every: 86_400_000 },
      input: { x: 1 },
      paused: false,
      wakeAt: null,
      state: {},
      expectRevision: null,
      releaseLease: false,
      now: clock.now(),
    });
    const stored = await store.getSchedule('runtime');
    await store.saveSchedule({
      ...stored!,
      input: String(stored!.input).replace('$wfc1:k2:', '$wfc1:k1:'),
      expectRevision: stored!.revision,
      releaseLease: false,
      now: clock.now(),
    });
    await expect(second.storage.schedules.getSchedule('runtime')).rejects.toThrow(
      /codec "k1", which is not configured/,
    );
    expect(await second.storage.schedules.getSchedule('runtime', { readable: true })).toMatchObject({
      input: undefined,
      unreadable: { codecIds: ['k1'], fields: ['input'] },
    });
  });
});
