import { PayloadCodecChain } from '../codec/payload-codec-chain.js';
import type { WorkflowPayloadCodec } from '../codec/workflow-payload-codec.js';
import type { WorkflowReencryptOptions, WorkflowReencryptResult } from './payload-reencryption.js';
import { WorkflowStorage } from './workflow-storage.js';
import type { WorkflowStore } from './workflow-store.js';

/**
 * Re-encrypts a store for tools outside the application (`nest-workflows reencrypt`): opens it
 * (the SQL stores are built with `migrate: false`, so this never migrates), rewrites its payloads
 * under `codecs[0]` with the others decoding what they wrote, and closes it again. Payloads
 * written before any codec read as they are, so they are encrypted too.
 */
export async function reencryptStore(
  store: WorkflowStore,
  codecs: readonly WorkflowPayloadCodec[],
  options: WorkflowReencryptOptions,
): Promise<WorkflowReencryptResult> {
  const chain = new PayloadCodecChain({ codecs, allowUnencoded: true });
  await store.init?.();
  try {
    return await new WorkflowStorage(store, { codecs: chain }).reencrypt(options, () => Date.now());
  } finally {
    await store.close?.();
  }
}
