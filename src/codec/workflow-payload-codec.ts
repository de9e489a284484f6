/**
 * Turns what workflows store into something else before any store sees it, and back: encryption
 * at rest (`AesGcmPayloadCodec`), or your own (a KMS envelope, compression). Configure it with the
 * module's `codec` option; `WorkflowStorage` applies it to inputs, outputs, step results, signal
 * payloads, custom statuses, schedule inputs, cancel reasons and error messages and stacks. Ids,
 * names and keys stay readable: the store indexes them.
 *
 * `encode` receives the JSON text of one payload and returns any string; `decode` receives that
 * string and returns the JSON text. Either may return a promise. A codec that can't decode (the
 * wrong key, tampered data) throws.
 */
export interface WorkflowPayloadCodec {
  /**
   * Written beside each payload it encodes, so that after a key rotation the codec that wrote a
   * payload is the one asked to read it. Letters, digits, `.`, `_` and `-`, at most 64 characters;
   * never reuse an id for a different key.
   */
  readonly id: string;
  encode(value: string): string | Promise<string>;
  decode(value: string): string | Promise<string>;
}
