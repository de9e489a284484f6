import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { atTurnEnd, leaveTurnEnd, type TurnEndListener } from '../../src/engine/turn-end.js';

function listener(name: string, heard: string[]): TurnEndListener {
  return { turnEnded: () => void heard.push(name) };
}

describe('atTurnEnd()', () => {
  it('calls each listener once when the turn ends, in the order they asked', async () => {
    const heard: string[] = [];
    const a = listener('a', heard);
    atTurnEnd(a);
    atTurnEnd(listener('b', heard));
    atTurnEnd(a);
    expect(heard).toEqual([]);
    await nextTurn();
    expect(heard).toEqual(['a', 'b']);
  });

  it('forgets a listener that left, so a long turn does not keep what is done', async () => {
    const heard: string[] = [];
    const done = listener('done', heard);
    atTurnEnd(done);
    atTurnEnd(listener('open', heard));
    leaveTurnEnd(done);
    await nextTurn();
    expect(heard).toEqual(['open']);
  });

  it('calls a listener that asks while the turn ends at the end of the next turn', async () => {
    const heard: string[] = [];
    const later = listener('later', heard);
    atTurnEnd({
      turnEnded: () => {
        heard.push('first');
        atTurnEnd(later);
      },
    });
    await nextTurn();
    expect(heard).toEqual(['first']);
    await nextTurn();
    expect(heard).toEqual(['first', 'later']);
  });
});
