import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { WorkflowPayloadCodec } from './workflow-payload-codec.js';

/** What `AesGcmPayloadCodec` takes. */
export interface AesGcmPayloadCodecOptions {
  /**
   * The 256-bit key: 32 bytes as a `Buffer` (or `Uint8Array`), or those bytes as a base64 string.
   * Generate one with `node -e "console.log(require('node:crypto').randomBytes(32).toString('base64'))"`.
   */
  key: Uint8Array | string;
  /**
   * Tags what this codec wrote, so the right key decodes it after a rotation. Default: `aes-gcm-`
   * and the first 8 hex digits of the key's SHA-256 (a fingerprint, not the key). Give each key
   * an id of its own, such as `'2026-12'`.
   */
  id?: string;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Encrypts payloads with AES-256-GCM from `node:crypto`: a fresh random 96-bit IV per payload,
 * and the codec's `id` bound as associated data, so a payload moved under another id, or changed
 * in any way, is refused instead of decoded. Stored as base64 of IV, ciphertext and the 128-bit
 * authentication tag.
 *
 * @example
 * codec: [new AesGcmPayloadCodec({ key: process.env.WORKFLOWS_KEY_2026_12!, id: '2026-12' })]
 */
export class AesGcmPayloadCodec implements WorkflowPayloadCodec {
  readonly id: string;
  private readonly key: Buffer;
  private readonly aad: Buffer;

  constructor(options: AesGcmPayloadCodecOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new TypeError('AesGcmPayloadCodec needs options: new AesGcmPayloadCodec({ key, id }).');
    }
    this.key = readKey(options.key);
    this.id = options.id ?? `aes-gcm-${createHash('sha256').update(this.key).digest('hex').slice(0, 8)}`;
    if (typeof this.id !== 'string' || this.id === '') {
      throw new TypeError('AesGcmPayloadCodec: "id" must be a non-empty string, such as \'2026-12\'.');
    }
    this.aad = Buffer.from(this.id, 'utf8');
  }

  encode(value: string): string {
    const iv = nextIv();
    const cipher = createCipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(this.aad);
    const body = cipher.update(value, 'utf8');
    cipher.final(); // GCM has no block padding: nothing left to flush, but final() computes the tag
    return Buffer.concat([iv, body, cipher.getAuthTag()], IV_BYTES + body.length + TAG_BYTES).toString('base64');
  }

  decode(value: string): string {
    const bytes = Buffer.from(value, 'base64');
    if (bytes.length < IV_BYTES + TAG_BYTES || !BASE64.test(value)) {
      throw new Error(
        `AesGcmPayloadCodec "${this.id}": the payload is not an AES-GCM ciphertext this codec wrote (malformed).`,
      );
    }
    const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, IV_BYTES), {
      authTagLength: TAG_BYTES,
    });
    decipher.setAAD(this.aad);
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    try {
      return Buffer.concat([
        decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)),
        decipher.final(),
      ]).toString('utf8');
    } catch {
      throw new Error(`AesGcmPayloadCodec "${this.id}": the payload failed authentication.`);
    }
  }
}

/**
 * IVs come from the CSPRNG a page at a time (a `randomBytes()` call per payload costs more than the
 * encryption of a small one); each 12 bytes are used once and never again, so every IV is as
 * random and as unique as one drawn on its own.
 */
const IV_PAGE = IV_BYTES * 256;
let ivPage = Buffer.alloc(0);
let ivOffset = 0;

function nextIv(): Buffer {
  if (ivOffset + IV_BYTES > ivPage.length) {
    ivPage = randomBytes(IV_PAGE);
    ivOffset = 0;
  }
  const iv = ivPage.subarray(ivOffset, ivOffset + IV_BYTES);
  ivOffset += IV_BYTES;
  return iv;
}

function readKey(key: unknown): Buffer {
  const fix =
    "Pass 32 random bytes as a Buffer, or as a base64 string (node -e \"console.log(require('node:crypto').randomBytes(32).toString('base64'))\").";
  if (key instanceof Uint8Array) {
    if (key.length !== KEY_BYTES)
      throw new TypeError(
        `AesGcmPayloadCodec: "key" is ${key.length} bytes; AES-256 needs exactly ${KEY_BYTES}. ${fix}`,
      );
    return Buffer.from(key);
  }
  if (typeof key === 'string') {
    const text = key.trim();
    if (text === '' || !BASE64.test(text) || text.length % 4 !== 0) {
      throw new TypeError(`AesGcmPayloadCodec: "key" is a string but not base64. ${fix}`);
    }
    const bytes = Buffer.from(text, 'base64');
    if (bytes.length !== KEY_BYTES) {
      throw new TypeError(
        `AesGcmPayloadCodec: "key" decodes to ${bytes.length} bytes; AES-256 needs exactly ${KEY_BYTES}. ${fix}`,
      );
    }
    return bytes;
  }
  throw new TypeError(`AesGcmPayloadCodec: "key" is ${key === undefined ? 'missing' : `a ${typeof key}`}. ${fix}`);
}
