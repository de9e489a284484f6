// What start() and signal() refuse before storing anything: options that are not an object or
// misspelt, an unknown workflow, an input JSON can't carry.
import { afterEach, describe, expect, it } from 'vitest';
import { isWorkflowInputError, UnknownWorkflowError, Workflow, workflowErrorStatus } from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

let app: EngineApp | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

describe('start() and signal() input', () => {
  it('refuses start() and signal() options that are not an object, and stores nothing', async () => {
    @Workflow('typo.not-object')
    class NotObject {
      async run() {}
    }
    app = await createEngineApp({ workflows: [NotObject] });
    await expect(app.client.start(NotObject, {}, null as never)).rejects.toThrow(
      'start() options must be an object (or left out), got null.',
    );
    await expect(app.client.start(NotObject, {}, 'id-1' as never)).rejects.toThrow(
      'start() options must be an object (or left out), got string.',
    );
    await expect(app.client.signal('s', {}, [] as never)).rejects.toThrow(
      'signal() options must be an object (or left out), got an array.',
    );
    expect(await app.client.list({})).toEqual([]);
    expect(await app.store.signals({ name: 's', key: null, afterId: 0, upToId: Number.MAX_SAFE_INTEGER })).toEqual([]);
  });

  it('refuses a misspelt start() or signal() option, and stores nothing', async () => {
    @Workflow('typo.flow')
    class Typo {
      async run() {}
    }
    app = await createEngineApp({ workflows: [Typo] });
    await expect(app.client.start(Typo, {}, { concurencyKey: 'customer-1' } as never)).rejects.toThrow(
      /start\(\) options: unknown key "concurencyKey"\. Known keys: id, version, concurrencyKey/,
    );
    await expect(app.client.signal('typo.signal', 1, { Key: 'k' } as never)).rejects.toThrow(
      /signal\(\) options: unknown key "Key"/,
    );
    expect(await app.client.list()).toEqual([]);
    expect(
      await app.store.signals({ name: 'typo.signal', key: 'k', afterId: 0, upToId: Number.MAX_SAFE_INTEGER }),
    ).toEqual([]);
  });

  it('starting an unknown workflow says what is known and stores nothing', async () => {
    @Workflow('known.flow')
    class Known {
      async run() {}
    }
    app = await createEngineApp({ workflows: [Known] });
    await expect(app.client.start('unknown.flow', {})).rejects.toThrow(UnknownWorkflowError);
    await expect(app.client.start('unknown.flow', {})).rejects.toThrow(/known: known.flow@1/);
    // As docs/workflows.md says: its own class, not an input error, and a 400 over HTTP all the same.
    const unknown = await app.client.start('unknown.flow', {}).catch((error: unknown) => error);
    expect(isWorkflowInputError(unknown)).toBe(false);
    expect(workflowErrorStatus(unknown)).toBe(400);
    await expect(app.client.start(Known, { big: 1n })).rejects.toThrow(/input.*BigInt/);
    expect(await app.client.list()).toEqual([]);
  });
});
