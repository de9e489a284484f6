import { Injectable } from '@nestjs/common';
import { Workflow, type WorkflowContext } from '@nestjs/workflows';

/** A stand-in for a language model: yields the words of its answer one by one, as a real one streams tokens. */
@Injectable()
export class FakeModel {
  async *answer(topic: string, delay: number): AsyncIterable<string> {
    const words = `Durable workflows let a ${topic} survive crashes deploys and restarts while every word reaches the browser live`;
    for (const word of words.split(' ')) {
      await new Promise((resolve) => setTimeout(resolve, delay));
      yield word;
    }
  }
}

/** What a draft ends with. */
export interface DraftResult {
  text: string;
  approvedBy: string;
}

/**
 * Drafts a text with the model, streaming each word to the readers of stream `out` as it comes,
 * then hands out an approval callback (its token on the same stream) and waits for a person to
 * approve it.
 */
@Workflow('drafts.write')
export class WriteDraft {
  constructor(private readonly model: FakeModel) {}

  async run(ctx: WorkflowContext, input: { topic: string; delay?: number }): Promise<DraftResult> {
    const text = await ctx.step('generate', async ({ stream }) => {
      const out = stream<{ word: string }>('out');
      const words: string[] = [];
      for await (const word of this.model.answer(input.topic, input.delay ?? 150)) {
        await out.write({ word });
        words.push(word);
      }
      return words.join(' ');
    });
    const { token } = await ctx.createCallback('approval', { timeout: '1h' });
    const out = ctx.stream('out');
    await out.write({ approve: `/approvals/${token}` });
    await out.close();
    const approval = await ctx.waitForCallback<{ by?: string }>('approval');
    return { text, approvedBy: approval?.by ?? 'someone' };
  }
}
