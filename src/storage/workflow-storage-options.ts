import type { PayloadCodecChain } from '../codec/payload-codec-chain.js';
import type { WorkflowPayloadError } from '../errors/workflow-payload.error.js';
import type { StoreStartup } from './store-startup.js';
import type { WorkflowStreamLimitOptions } from './stream-limits.js';

/** How long an instance or a schedule whose payloads no configured codec can read waits before it is tried again. */
export const UNREADABLE_RETRY_DELAY = 60_000;

/** What `WorkflowStorage` is built with besides the store. */
export interface WorkflowStorageOptions {
  /** The configured codecs; `null`: payloads pass through unencoded. */
  codecs?: PayloadCodecChain | null;
  /**
   * Told about each claimed instance or schedule handed back because a payload could not be
   * decoded; `subject` names it (`Instance "id" (workflow@1)`, `Schedule "id"`).
   */
  onUnreadable?(subject: string, error: WorkflowPayloadError): void;
  /** How startup retries the store's `init()` (see `initStore()`). Default: once, no retry. */
  startup?: StoreStartup;
  /** The streams' limits, each defaulting to `DEFAULT_STREAM_LIMITS`'. */
  streamLimits?: Partial<WorkflowStreamLimitOptions>;
}
