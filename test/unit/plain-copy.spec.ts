import { describe, expect, it } from 'vitest';
import { plainCopy } from '../../src/storage/plain-copy.js';

describe('plainCopy', () => {
  it('copies arrays and plain objects all the way down, so changing the copy leaves the original alone', () => {
    const original = { a: [1, { b: 'x', c: null }], d: { e: { f: true } }, g: undefined };
    const copy = plainCopy(original);
    expect(copy).toEqual(original);
    expect('g' in copy).toBe(true);
    (copy.a[1] as { b: string }).b = 'changed';
    copy.d.e.f = false;
    (copy.a as unknown[]).push(2);
    expect(original).toEqual({ a: [1, { b: 'x', c: null }], d: { e: { f: true } }, g: undefined });
  });

  it('keeps a __proto__ key (JSON can carry one) as an own property, never as the prototype', () => {
    const original = JSON.parse('{"__proto__": {"polluted": true}, "x": 1}') as Record<string, unknown>;
    const copy = plainCopy(original);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(Object.keys(copy)).toEqual(['__proto__', 'x']);
    expect(JSON.stringify(copy)).toBe(JSON.stringify(original));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
