import { PayloadCodecChain } from '../codec/payload-codec-chain.js';
import type { WorkflowPayloadCodec } from '../codec/workflow-payload-codec.js';
import { WorkflowStorage } from './workflow-storage.js';
import type { WorkflowStore } from './workflow-store.js';

/**
 * A store opened for an operator's tool outside the application (`nest-workflows list`, `cancel`,
 * `fork`...): `fn` gets the storage layer over it (with `codecs`, payloads are decoded and encoded
 * as the application does; without, they pass as stored), and the store is closed after. The SQL
 * stores are built with `migrate: false`, so this never migrates: a schema that is behind fails
 * with `WorkflowSchemaError` before anything is read.
 */
export async function withOperatorStorage<T>(
  store: WorkflowStore,
  codecs: readonly WorkflowPayloadCodec[] | null,
  fn: (storage: WorkflowStorage) => Promise<T>,
): Promise<T> {
  const chain = codecs === null ? null : new PayloadCodecChain({ codecs, allowUnencoded: true });
  await store.init?.();
  try {
    return await fn(new WorkflowStorage(store, { codecs: chain }));
  } finally {
    await store.close?.();
  }
}
