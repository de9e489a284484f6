import { afterEach, describe, expect, it } from 'vitest';
import { Workflow, type WorkflowContext, type WorkflowPayloadCodec } from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

let app: EngineApp;
afterEach(async () => app?.close());

/** A codec with a size limit, as a KMS's encrypt call has one. */
class SizeLimitedCodec implements WorkflowPayloadCodec {
  readonly id = 'kms';
  encode(text: string): string {
    if (text.length > 4096) throw new Error('KMS: plaintext is larger than 4096 bytes');
    return Buffer.from(text).toString('base64');
  }
  decode(text: string): string {
    return Buffer.from(text, 'base64').toString();
  }
}

describe('a payload the codec refuses to encode', () => {
  it('fails the step that returned it at once, without running it again', async () => {
    const ran: number[] = [];
    const undone: string[] = [];
    @Workflow('codec.too-large')
    class TooLarge {
      async run(ctx: WorkflowContext) {
        await ctx.step('reserve', () => 'r1', { compensate: (id) => undone.push(id) });
        const report = await ctx.step('report', ({ attempt }) => (ran.push(attempt), 'x'.repeat(10_000)));
        return report.length;
      }
    }
    app = await createEngineApp({ workflows: [TooLarge], codec: new SizeLimitedCodec() });
    const handle = await app.client.start(TooLarge, null);
    for (let i = 0; i < 3; i++) {
      await app.worker.drain();
      app.clock.advance('10m'); // past any lease and backoff
    }
    const status = await handle.status({ journal: true });
    expect(ran).toEqual([1]);
    expect(status.status).toBe('failed');
    expect(status.error!.message).toMatch(
      /result of step "report" could not be encoded by the payload codec \(KMS: plaintext is larger than 4096 bytes\)/,
    );
    expect(status.journal!.find((e) => e.name === 'report')).toMatchObject({ state: 'failed', attempts: 1 });
    expect(undone).toEqual(['r1']);
  });

  it('refuses a codec whose encode() returns something other than a string, and stores nothing', async () => {
    class BufferCodec implements WorkflowPayloadCodec {
      readonly id = 'buffer';
      encode(text: string): string {
        return Buffer.from(text) as unknown as string;
      }
      decode(text: string): string {
        return text;
      }
    }
    @Workflow('codec.buffer')
    class Plain {
      async run(_ctx: WorkflowContext, n: number) {
        return n;
      }
    }
    app = await createEngineApp({ workflows: [Plain], codec: new BufferCodec() });
    await expect(app.client.start(Plain, 1, { id: 'b' })).rejects.toThrow(
      /Codec "buffer" returned a Buffer from encode\(\), not a string/,
    );
    expect(await app.client.list()).toEqual([]);
  });
});

describe('a workflow output the codec refuses to encode', () => {
  it('fails the instance with what was refused, and compensates, instead of running it again and again', async () => {
    const undone: string[] = [];
    @Workflow('codec.output-too-large')
    class LargeOutput {
      async run(ctx: WorkflowContext) {
        await ctx.step('reserve', () => 'r1', { compensate: (id) => undone.push(id) });
        return 'x'.repeat(10_000);
      }
    }
    app = await createEngineApp({ workflows: [LargeOutput], codec: new SizeLimitedCodec() });
    const handle = await app.client.start(LargeOutput, null);
    for (let i = 0; i < 3; i++) {
      await app.worker.drain();
      app.clock.advance('10m');
    }
    const status = await handle.status();
    expect(status.status).toBe('failed');
    expect(status.runs).toBe(1);
    expect(status.error!.message).toMatch(
      /output of workflow "codec.output-too-large" .* could not be encoded by the payload codec \(KMS: plaintext is larger than 4096 bytes\)/,
    );
    expect(undone).toEqual(['r1']);
  });
});

describe('a workflow output under a codec', () => {
  it('is encoded once: the check before the final write is the encoding that write stores', async () => {
    const encoded: string[] = [];
    class CountingCodec implements WorkflowPayloadCodec {
      readonly id = 'count';
      encode(text: string): string {
        encoded.push(text);
        return Buffer.from(text).toString('base64');
      }
      decode(text: string): string {
        return Buffer.from(text, 'base64').toString();
      }
    }
    @Workflow('codec.output-once')
    class OutputOnce {
      async run() {
        return { report: 'done', lines: [1, 2, 3] };
      }
    }
    app = await createEngineApp({ workflows: [OutputOnce], codec: new CountingCodec() });
    const handle = await app.client.start(OutputOnce, null);
    await app.worker.drain();
    await expect(handle.result()).resolves.toEqual({ report: 'done', lines: [1, 2, 3] });
    expect(encoded.filter((text) => text === JSON.stringify({ report: 'done', lines: [1, 2, 3] }))).toHaveLength(1);
  });
});
