import { describe, expect, it } from 'vitest';
import { toJsonValue } from '../../src/engine/json-value.js';

/** What a JSON round trip gives, the reference `toJsonValue()` must match exactly. */
const roundTrip = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;

describe('toJsonValue()', () => {
  const cases: Array<[string, () => unknown]> = [
    ['primitives', () => ['s', '', 0, 1.5, -2, 1e21, 5e-324, true, false, null]],
    ['negative zero, at the top and inside', () => ({ z: -0, list: [-0, 0] })],
    ['undefined dropped in objects, null in arrays, and holes', () => ({ a: undefined, b: [undefined, 1, , 3], c: 1 })], // eslint-disable-line no-sparse-arrays
    ['key order, integer-like keys included', () => ({ b: 1, a: 2, 10: 'ten', 2: 'two', 'x y': 3 })],
    [
      'a Date and a toJSON() that returns an object, a primitive or undefined',
      () => ({
        at: new Date('2026-01-02T03:04:05.678Z'),
        obj: { toJSON: (key: string) => ({ from: key, nested: new Date(0) }) },
        prim: { toJSON: () => 7 },
        gone: { toJSON: () => undefined },
        list: [{ toJSON: (key: string) => `index ${key}` }, { toJSON: () => undefined }],
      }),
    ],
    [
      'Object.create(null) and JSON-made objects with a __proto__ key',
      () => ({
        bare: Object.assign(Object.create(null) as object, { k: 1 }),
        parsed: JSON.parse('{"__proto__": {"p": 1}, "x": [1]}') as unknown,
      }),
    ],
    [
      'unicode (pairs of surrogates, separators, quotes and backslashes)',
      () => ['é 日本 😀', '\u2028\u2029', '\ud83d\ude00', '"\\', '\\ud800'],
    ],
    [
      'deep nesting and shared (non-cyclic) references',
      () => {
        const shared = { s: [1, { t: true }] };
        return { one: shared, two: shared, deep: { a: { b: { c: { d: [[[shared]]] } } } } };
      },
    ],
  ];
  for (const [label, make] of cases) {
    it(`copies ${label} exactly as a JSON round trip does`, () => {
      const value = make();
      const copied = toJsonValue(value, 'The value');
      expect(copied).toStrictEqual(roundTrip(value));
      expect(JSON.stringify(copied)).toBe(JSON.stringify(value));
      // -0 becomes 0, as JSON has it.
      expect(JSON.stringify(copied, (_k, v: unknown) => (Object.is(v, -0) ? '-0!' : v))).not.toContain('-0!');
    });
  }

  it('hands back a copy: changing it leaves the original alone', () => {
    const original = { list: [{ n: 1 }], nested: { m: 2 } };
    const copied = toJsonValue(original, 'The value') as typeof original;
    copied.list[0]!.n = 9;
    copied.nested.m = 9;
    expect(original).toEqual({ list: [{ n: 1 }], nested: { m: 2 } });
  });

  it('keeps a __proto__ key as an own property, never as the prototype', () => {
    const copied = toJsonValue(JSON.parse('{"__proto__": {"polluted": true}}'), 'The value') as Record<string, unknown>;
    expect(Object.getPrototypeOf(copied)).toBe(Object.prototype);
    expect(Object.keys(copied)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('reads a getter once, and copies what it read', () => {
    let reads = 0;
    const value = {
      get n() {
        reads++;
        return reads;
      },
    };
    expect(toJsonValue(value, 'The value')).toEqual({ n: 1 });
    expect(reads).toBe(1);
  });

  it('passes undefined at the top through, and an object whose toJSON() gives undefined reads as undefined', () => {
    expect(toJsonValue(undefined, 'The value')).toBeUndefined();
    expect(toJsonValue({ toJSON: () => undefined }, 'The value')).toBeUndefined();
  });

  it('refuses what JSON would change or drop silently, naming the path', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = { back: cyclic };
    expect(() => toJsonValue(cyclic, 'The result', 'result')).toThrow(
      /The result is not a JSON value: a cycle at result\.self\.back\./,
    );
    expect(() => toJsonValue({ list: [1, { 'odd key': NaN }] }, 'The result', 'result')).toThrow(
      /NaN at result\.list\[1\]\["odd key"\]\. Use a finite number or null\./,
    );
    expect(() => toJsonValue([{ f: () => 1 }], 'The result', 'result')).toThrow(/a function at result\[0\]\.f\./);
    expect(() => toJsonValue({ n: 10n }, 'The result', 'result')).toThrow(/a BigInt at result\.n\./);
    expect(() => toJsonValue({ m: new Map() }, 'The result', 'result')).toThrow(/a Map at result\.m\./);
    expect(() => toJsonValue(new Uint8Array(2), 'The result', 'result')).toThrow(
      /an instance of Uint8Array at result\./,
    );
    expect(() => toJsonValue({ at: { toJSON: () => new Set() } }, 'The result', 'result')).toThrow(
      /a Set at result\.at\./,
    );
    const selfish = { toJSON: (): unknown => selfish };
    expect(() => toJsonValue(selfish, 'The result', 'result')).toThrow(
      /an object whose toJSON\(\) returns itself at result\./,
    );
    // A lone surrogate: PostgreSQL's json refuses it and utf8mb4 has no code for it, so no store keeps one.
    expect(() => toJsonValue(['ok', 'x\ud800'], 'The result', 'result')).toThrow(
      /a string that is not well-formed Unicode \(a lone surrogate\) at result\[1\]\. .*toWellFormed/,
    );
    expect(() => toJsonValue({ a: { '\udc00': 1 } }, 'The result', 'result')).toThrow(
      /a key that is not well-formed Unicode \(a lone surrogate\) at result\.a\["\\udc00"\]\./,
    );
    // A NUL character: PostgreSQL can't read one out of JSON, so no store keeps one either.
    expect(() => toJsonValue({ bytes: 'a\u0000b' }, 'The result', 'result')).toThrow(
      /a string holding a NUL character \(\\u0000\) at result\.bytes\. .*base64/,
    );
    expect(() => toJsonValue([{ 'k\u0000': 1 }], 'The result', 'result')).toThrow(
      /a key holding a NUL character \(\\u0000\) at result\[0\]/,
    );
    // A backslash followed by "u0000" is text, not a NUL.
    expect(toJsonValue('\\u0000', 'The result', 'result')).toBe('\\u0000');
  });
});
