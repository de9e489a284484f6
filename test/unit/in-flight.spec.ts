import { describe, expect, it } from 'vitest';
import { InFlight } from '../../src/leased-loop/in-flight.js';

describe('InFlight', () => {
  it('keeps each item once, in the order added, as a Set does', () => {
    const a = { name: 'a' };
    const b = { name: 'b' };
    const set = new InFlight<object>();
    set.add(a);
    set.add(b);
    set.add(a);
    expect([...set]).toEqual([a, b]);
    expect(set.size).toBe(2);
    expect(set.has(b)).toBe(true);
  });

  it('removes an item from anywhere, the others keeping their order, and says whether it was in', () => {
    const set = new InFlight<string>();
    for (const item of ['a', 'b', 'c', 'd']) set.add(item);
    expect(set.delete('b')).toBe(true);
    expect(set.delete('b')).toBe(false);
    expect([...set]).toEqual(['a', 'c', 'd']);
    set.add('b');
    expect([...set]).toEqual(['a', 'c', 'd', 'b']);
    expect(set.has('x')).toBe(false);
  });

  it('finds the newest item a test accepts', () => {
    const set = new InFlight<{ id: string; run: number }>();
    const first = { id: 'x', run: 1 };
    const second = { id: 'x', run: 2 };
    set.add(first);
    set.add({ id: 'y', run: 1 });
    set.add(second);
    expect(set.findLast((item) => item.id === 'x')).toBe(second);
    set.delete(second);
    expect(set.findLast((item) => item.id === 'x')).toBe(first);
    expect(set.findLast((item) => item.id === 'z')).toBeUndefined();
  });

  it('hands over everything it held and is empty after', () => {
    const set = new InFlight<number>();
    set.add(1);
    set.add(2);
    expect(set.takeAll()).toEqual([1, 2]);
    expect(set.size).toBe(0);
    expect([...set]).toEqual([]);
  });
});
