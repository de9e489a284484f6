import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AesGcmPayloadCodec } from '../../src/codec/aes-gcm-payload.codec.js';
import { PayloadCodecChain, codecIdOf } from '../../src/codec/payload-codec-chain.js';
import type { WorkflowPayloadCodec } from '../../src/codec/workflow-payload-codec.js';
import { WorkflowPayloadError } from '../../src/errors/workflow-payload.error.js';
import { decodeError, encodeError } from '../../src/storage/error-encoding.js';

const keyA = randomBytes(32);
const keyB = randomBytes(32);
const chainOf = (codecs: WorkflowPayloadCodec[], allowUnencoded = true) =>
  new PayloadCodecChain({ codecs, allowUnencoded });

/** A codec whose encode and decode are asynchronous, as a KMS-backed one would be. */
class AsyncReverseCodec implements WorkflowPayloadCodec {
  readonly id = 'reverse';
  async encode(value: string) {
    return [...value].reverse().join('');
  }
  async decode(value: string) {
    return [...value].reverse().join('');
  }
}

describe('AesGcmPayloadCodec', () => {
  it('round-trips text, with a fresh IV each time (the same text never encrypts the same way twice)', () => {
    const codec = new AesGcmPayloadCodec({ key: keyA, id: 'k1' });
    const first = codec.encode('{"card":"4242 4242 4242 4242"}');
    const second = codec.encode('{"card":"4242 4242 4242 4242"}');
    expect(first).not.toBe(second);
    expect(first).not.toContain('4242');
    expect(codec.decode(first)).toBe('{"card":"4242 4242 4242 4242"}');
    expect(codec.decode(second)).toBe('{"card":"4242 4242 4242 4242"}');
    expect(codec.decode(codec.encode(''))).toBe('');
  });

  it('takes the key as base64 too, and defaults the id to a fingerprint of the key', () => {
    const fromBuffer = new AesGcmPayloadCodec({ key: keyA });
    const fromBase64 = new AesGcmPayloadCodec({ key: keyA.toString('base64') });
    expect(fromBuffer.id).toMatch(/^aes-gcm-[0-9a-f]{8}$/);
    expect(fromBase64.id).toBe(fromBuffer.id);
    expect(fromBase64.decode(fromBuffer.encode('hello'))).toBe('hello');
    expect(new AesGcmPayloadCodec({ key: keyB }).id).not.toBe(fromBuffer.id);
  });

  it('refuses a key that is not 32 bytes, with what was wrong and how to make one', () => {
    expect(() => new AesGcmPayloadCodec({ key: randomBytes(16) })).toThrow(
      /"key" is 16 bytes; AES-256 needs exactly 32.*randomBytes\(32\)/,
    );
    expect(() => new AesGcmPayloadCodec({ key: randomBytes(24).toString('base64') })).toThrow(/decodes to 24 bytes/);
    expect(() => new AesGcmPayloadCodec({ key: 'not base64 at all!' })).toThrow(/not base64/);
    expect(() => new AesGcmPayloadCodec({ key: keyA.toString('hex') })).toThrow(/decodes to 48 bytes|not base64/);
    expect(() => new AesGcmPayloadCodec({ key: undefined as never })).toThrow(/"key" is missing/);
    expect(() => new AesGcmPayloadCodec({ key: 42 as never })).toThrow(/"key" is a number/);
    expect(() => new AesGcmPayloadCodec(undefined as never)).toThrow(/needs options/);
    expect(() => new AesGcmPayloadCodec({ key: keyA, id: '' })).toThrow(/"id" must be a non-empty string/);
  });

  it('refuses tampered ciphertext: a flipped bit anywhere, a truncation, or another id for the same key', () => {
    const codec = new AesGcmPayloadCodec({ key: keyA, id: 'k1' });
    const encoded = Buffer.from(codec.encode('{"amount":100}'), 'base64');
    for (const at of [0, 12, encoded.length - 1]) {
      const tampered = Buffer.from(encoded);
      tampered[at]! ^= 0x01;
      expect(() => codec.decode(tampered.toString('base64'))).toThrow(/failed authentication/);
    }
    expect(() => codec.decode(encoded.subarray(0, 20).toString('base64'))).toThrow(/malformed/);
    expect(() => codec.decode('%%%')).toThrow(/malformed/);
    // The id is associated data: the same key under another id can't read it.
    expect(() => new AesGcmPayloadCodec({ key: keyA, id: 'k2' }).decode(encoded.toString('base64'))).toThrow(
      /failed authentication/,
    );
    expect(() => new AesGcmPayloadCodec({ key: keyB, id: 'k1' }).decode(encoded.toString('base64'))).toThrow(
      /failed authentication/,
    );
  });
});

describe('PayloadCodecChain', () => {
  it('encodes with the first codec and tags the payload with its id', async () => {
    const chain = chainOf([
      new AesGcmPayloadCodec({ key: keyA, id: 'new' }),
      new AesGcmPayloadCodec({ key: keyB, id: 'old' }),
    ]);
    const stored = await chain.encode({ ssn: '078-05-1120' });
    expect(typeof stored).toBe('string');
    expect(codecIdOf(stored)).toBe('new');
    expect(String(stored)).not.toContain('078-05-1120');
    expect(await chain.decode(stored)).toEqual({ ssn: '078-05-1120' });
    expect(chain.isCurrent(stored)).toBe(true);
  });

  it('reads what an older codec wrote (rotation), and knows it is not current', async () => {
    const old = chainOf([new AesGcmPayloadCodec({ key: keyB, id: 'old' })]);
    const rotated = chainOf([
      new AesGcmPayloadCodec({ key: keyA, id: 'new' }),
      new AesGcmPayloadCodec({ key: keyB, id: 'old' }),
    ]);
    const written = await old.encode(['a', 1, true]);
    expect(await rotated.decode(written)).toEqual(['a', 1, true]);
    expect(rotated.isCurrent(written)).toBe(false);
  });

  it('says which codec is missing and what to do when a payload’s codec is not configured', async () => {
    const old = chainOf([new AesGcmPayloadCodec({ key: keyB, id: 'old' })]);
    const written = await old.encode('secret');
    const without = chainOf([new AesGcmPayloadCodec({ key: keyA, id: 'new' })]);
    const error = await without.decode(written).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WorkflowPayloadError);
    expect((error as WorkflowPayloadError).codecId).toBe('old');
    expect((error as Error).message).toMatch(
      /written by codec "old", which is not configured \(configured: "new"\).*Add codec "old" back/,
    );
  });

  it('refuses a tampered payload as a WorkflowPayloadError, never decoding it', async () => {
    const chain = chainOf([new AesGcmPayloadCodec({ key: keyA, id: 'k' })]);
    const stored = String(await chain.encode({ amount: 100 }));
    const body = Buffer.from(stored.slice('$wfc1:k:'.length), 'base64');
    body[body.length - 20]! ^= 0xff;
    const tampered = `$wfc1:k:${body.toString('base64')}`;
    await expect(chain.decode(tampered)).rejects.toThrow(WorkflowPayloadError);
    await expect(chain.decode(tampered)).rejects.toThrow(/Codec "k" refused a stored payload.*failed authentication/);
  });

  it('reads payloads stored before any codec as they are, unless told to refuse them', async () => {
    const lenient = chainOf([new AesGcmPayloadCodec({ key: keyA, id: 'k' })]);
    const strict = chainOf([new AesGcmPayloadCodec({ key: keyA, id: 'k' })], false);
    expect(await lenient.decode({ plain: true })).toEqual({ plain: true });
    expect(await lenient.decode('just text')).toBe('just text');
    await expect(strict.decode({ plain: true })).rejects.toThrow(
      /stored without a codec.*requireEncodedPayloads.*reencrypt/,
    );
    // null and undefined carry nothing: never encoded, always read.
    expect(await strict.decode(null)).toBeNull();
    expect(await strict.encode(null)).toBeNull();
    expect(await strict.encode(undefined)).toBeUndefined();
    expect(lenient.isCurrent({ plain: true })).toBe(false);
  });

  it('works with asynchronous codecs', async () => {
    const chain = chainOf([new AsyncReverseCodec()]);
    const stored = await chain.encode({ a: 'b' });
    expect(stored).toBe('$wfc1:reverse:}"b":"a"{');
    expect(await chain.decode(stored)).toEqual({ a: 'b' });
    expect(await chain.decodeText(await chain.encodeText('why'))).toBe('why');
  });

  it('refuses an empty list, duplicate ids and ids that cannot be stored beside a payload', () => {
    expect(() => chainOf([])).toThrow(/list is empty/);
    expect(() =>
      chainOf([new AesGcmPayloadCodec({ key: keyA, id: 'same' }), new AesGcmPayloadCodec({ key: keyB, id: 'same' })]),
    ).toThrow(/two codecs share the id "same"/);
    expect(() => chainOf([new AesGcmPayloadCodec({ key: keyA, id: 'has:colon' })])).toThrow(
      /id "has:colon".*1 to 64 letters/,
    );
    expect(() => chainOf([{ id: 'x' } as never])).toThrow(/encode\(\) and decode\(\)/);
  });
});

describe('stored errors', () => {
  const chain = chainOf([new AesGcmPayloadCodec({ key: keyA, id: 'k' })]);

  it('keep their name and the engine’s own fields readable and encode the rest, nested errors included', async () => {
    const error = {
      name: 'PaymentDeclinedError',
      message: 'card 4242 declined',
      stack: 'PaymentDeclinedError: card 4242 declined\n    at charge (payments.ts:1:1)',
      step: 'charge',
      orderId: 'order-secret-77',
      cause: { name: 'HttpError', message: 'upstream said 4242 is stolen' },
      compensation: { name: 'RefundError', message: 'refund of 4242 failed', step: 'charge' },
    };
    const stored = await encodeError(chain, error);
    const text = JSON.stringify(stored);
    expect(text).not.toMatch(/4242|order-secret-77/);
    expect(stored.name).toBe('PaymentDeclinedError');
    expect(stored.step).toBe('charge');
    expect((stored.cause as { name: string }).name).toBe('HttpError');
    expect((stored.compensation as { name: string }).name).toBe('RefundError');
    expect(await decodeError((v) => chain.decode(v), stored, 'error')).toEqual(error);
  });
});
