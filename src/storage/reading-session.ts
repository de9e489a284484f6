import type { WorkflowPayloadCodec } from '../codec/workflow-payload-codec.js';
import { PayloadCodecChain } from '../codec/payload-codec-chain.js';
import { WorkflowStorage } from './workflow-storage.js';
import type { WorkflowStore } from './workflow-store.js';

/**
 * Opens `store` (already migrated: its `init()` only checks), hands `read` the storage layer over
 * it with `codecs` (none: payloads pass as stored), and closes the store however `read` ends. What
 * the CLI's reading commands (`export-history`) run in.
 */
export async function withReadingSession<T>(
  store: WorkflowStore,
  codecs: readonly WorkflowPayloadCodec[] | null,
  read: (storage: WorkflowStorage) => Promise<T>,
): Promise<T> {
  const chain = codecs && codecs.length > 0 ? new PayloadCodecChain({ codecs, allowUnencoded: true }) : null;
  try {
    await store.init?.();
    return await read(new WorkflowStorage(store, chain ? { codecs: chain } : {}));
  } finally {
    await store.close?.();
  }
}
