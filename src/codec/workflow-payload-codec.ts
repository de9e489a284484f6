/**
 * Encodes what workflows store (inputs, outputs, step results, signal payloads, custom statuses,
 * error messages) before the store sees it, to encrypt it. Codecs are validated by the module
 * today; applying them arrives with the codec release (see CHANGELOG.md).
 */
export interface WorkflowPayloadCodec {
  /** Written with each payload, so the right codec decodes it after a key rotation. */
  readonly id: string;
  encode(value: string): string | Promise<string>;
  decode(value: string): string | Promise<string>;
}
