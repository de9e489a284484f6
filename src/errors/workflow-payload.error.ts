import { WorkflowError } from './workflow.error.js';

/**
 * A stored payload that no configured codec can read: written under a codec (a key) that is no
 * longer configured, changed after it was written, or stored unencoded while
 * `requireEncodedPayloads` refuses that. The worker hands such an instance back and tries again
 * later, so putting the codec back lets it run; nothing is lost.
 */
export class WorkflowPayloadError extends WorkflowError {
  constructor(
    message: string,
    /** The id of the codec that wrote the payload, or `null` when it was stored without one. */
    readonly codecId: string | null,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
