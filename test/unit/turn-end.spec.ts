import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { cancelDeferredFlush, deferFlush, type DeferredFlush } from '../../src/engine/deferred-flushes.js';

function listener(name: string, heard: string[]): DeferredFlush {
  return { flushDeferred: () => void heard.push(name) };
}

describe('deferFlush()', () => {
  it('calls each listener once when the turn ends, in the order they asked', async () => {
    const heard: string[] = [];
    const a = listener('a', heard);
    deferFlush(a);
    deferFlush(listener('b', heard));
    deferFlush(a);
    expect(heard).toEqual([]);
    await nextTurn();
    expect(heard).toEqual(['a', 'b']);
  });

  it('forgets a listener that left, so a long turn does not keep what is done', async () => {
    const heard: string[] = [];
    const done = listener('done', heard);
    deferFlush(done);
    deferFlush(listener('open', heard));
    cancelDeferredFlush(done);
    await nextTurn();
    expect(heard).toEqual(['open']);
  });

  it('calls a listener that asks while the turn ends at the end of the next turn', async () => {
    const heard: string[] = [];
    const later = listener('later', heard);
    deferFlush({
      flushDeferred: () => {
        heard.push('first');
        deferFlush(later);
      },
    });
    await nextTurn();
    expect(heard).toEqual(['first']);
    await nextTurn();
    expect(heard).toEqual(['first', 'later']);
  });
});
