import { WorkflowPayloadError } from '../errors/workflow-payload.error.js';
import type { WorkflowPayloadCodec } from './workflow-payload-codec.js';

/**
 * How an encoded payload is stored: one string, `$wfc1:<codec id>:<what the codec wrote>`, in
 * place of the JSON value. A string keeps it storable everywhere a payload goes (JSON columns and
 * the text column of a cancel reason), and the id says which codec reads it back.
 */
const PREFIX = '$wfc1:';
const CODEC_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** What `PayloadCodecChain` is built from: the module's resolved codec settings. */
export interface PayloadCodecSettings {
  /** The first encodes; each decodes what it wrote. At least one. */
  codecs: readonly WorkflowPayloadCodec[];
  /** Read payloads stored without a codec (before one was configured) as they are. */
  allowUnencoded: boolean;
}

/**
 * The configured codecs as one: encodes with the first, decodes each payload with the codec whose
 * id it carries. `null` and `undefined` pass through unencoded (they carry nothing, and the engine
 * reads them as "not set").
 */
export class PayloadCodecChain {
  private readonly byId = new Map<string, WorkflowPayloadCodec>();
  readonly current: WorkflowPayloadCodec;
  readonly allowUnencoded: boolean;

  constructor(settings: PayloadCodecSettings) {
    const { codecs } = settings;
    if (codecs.length === 0)
      throw new TypeError(
        'Invalid WorkflowsModule option "codec": the list is empty. Leave the option out for no codec.',
      );
    for (const codec of codecs) {
      if (!codec || typeof codec.encode !== 'function' || typeof codec.decode !== 'function') {
        throw new TypeError(
          'Invalid WorkflowsModule option "codec": each codec needs an id and encode() and decode() methods.',
        );
      }
      if (typeof codec.id !== 'string' || !CODEC_ID.test(codec.id)) {
        throw new TypeError(
          `Invalid WorkflowsModule option "codec": the id ${JSON.stringify(codec.id)} of ${codec.constructor?.name ?? 'a codec'} ` +
            'must be 1 to 64 letters, digits, ".", "_" or "-" (it is stored beside every payload it writes).',
        );
      }
      if (this.byId.has(codec.id)) {
        throw new TypeError(
          `Invalid WorkflowsModule option "codec": two codecs share the id "${codec.id}". Give each key an id of its own, ` +
            'or a payload could be handed to the wrong key.',
        );
      }
      this.byId.set(codec.id, codec);
    }
    this.current = codecs[0]!;
    this.allowUnencoded = settings.allowUnencoded;
  }

  /** The ids of the configured codecs, the current one first. */
  get ids(): string[] {
    return [...this.byId.keys()];
  }

  /** Encodes one JSON value with the current codec. */
  async encode(value: unknown): Promise<unknown> {
    if (value === null || value === undefined) return value;
    const text = JSON.stringify(value);
    if (text === undefined) return value;
    const encoded = await this.current.encode(text);
    // Anything else would be stored as its text (a Buffer as raw bytes, `undefined` as "undefined")
    // and could never be read back: refuse it before anything is stored.
    if (typeof encoded !== 'string') {
      throw new TypeError(
        `Codec "${this.current.id}" returned ${describeValue(encoded)} from encode(), not a string, so nothing was stored. ` +
          'Return a string from encode() (binary data as base64, say) and accept it back in decode().',
      );
    }
    return `${PREFIX}${this.current.id}:${encoded}`;
  }

  /** Encodes a string column's value (a cancel reason): the same format, as a string. */
  async encodeText(value: string | null): Promise<string | null> {
    return (await this.encode(value)) as string | null;
  }

  /**
   * Decodes one stored value: an envelope with the codec that wrote it, anything else as it is
   * (stored before a codec was configured) unless unencoded payloads are refused. Throws
   * `WorkflowPayloadError` when no configured codec can read it.
   */
  async decode(stored: unknown, allowUnencoded = this.allowUnencoded): Promise<unknown> {
    const id = codecIdOf(stored);
    if (id === null) {
      if (stored === null || stored === undefined || allowUnencoded) return stored;
      throw new WorkflowPayloadError(
        'A payload is stored without a codec, and requireEncodedPayloads refuses those. ' +
          'Run `nest-workflows reencrypt` (or WorkflowClient.reencrypt()) once to encode what was stored before the codec was configured.',
        null,
      );
    }
    const codec = this.byId.get(id);
    if (!codec) {
      throw new WorkflowPayloadError(
        `A payload was written by codec "${id}", which is not configured (configured: ${this.ids.map((c) => `"${c}"`).join(', ')}). ` +
          `Add codec "${id}" back to the codec option, after the current one, and keep it until re-encryption has rewritten everything it wrote.`,
        id,
      );
    }
    const body = (stored as string).slice(PREFIX.length + id.length + 1);
    let text: string;
    try {
      text = await codec.decode(body);
    } catch (error) {
      throw new WorkflowPayloadError(
        `Codec "${id}" refused a stored payload (${error instanceof Error ? error.message : String(error)}): it was changed after ` +
          'it was written, or the key configured under this id is not the one that wrote it. It is never decoded as it stands.',
        id,
        { cause: error },
      );
    }
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new WorkflowPayloadError(`Codec "${id}" decoded a stored payload into something that is not JSON.`, id, {
        cause: error,
      });
    }
  }

  /** Decodes a string column's value (a cancel reason). */
  async decodeText(stored: string | null, allowUnencoded = this.allowUnencoded): Promise<string | null> {
    const value = await this.decode(stored, allowUnencoded);
    return value === null || value === undefined ? null : String(value);
  }

  /** Whether `stored` needs rewriting to be under the current codec (`null` never does). */
  isCurrent(stored: unknown): boolean {
    if (stored === null || stored === undefined) return true;
    return codecIdOf(stored) === this.current.id;
  }
}

function describeValue(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'object') return `a ${(value as object).constructor?.name ?? 'object'}`;
  return `a ${typeof value}`;
}

/** The id of the codec that wrote `stored`, or `null` for a value stored without one. */
export function codecIdOf(stored: unknown): string | null {
  if (typeof stored !== 'string' || !stored.startsWith(PREFIX)) return null;
  const end = stored.indexOf(':', PREFIX.length);
  return end > PREFIX.length ? stored.slice(PREFIX.length, end) : null;
}
