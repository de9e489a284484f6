import { PayloadCodecChain } from '../codec/payload-codec-chain.js';
import type { WorkflowPayloadCodec } from '../codec/workflow-payload-codec.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import type { WorkflowReencryptOptions, WorkflowReencryptResult } from '../storage/payload-reencryption.js';
import { WorkflowStorage } from '../storage/workflow-storage.js';
import { MySqlWorkflowStore } from './mysql-workflow.store.js';

/**
 * Re-encryption of a MySQL/MariaDB store for tools outside the application (`nest-workflows
 * reencrypt --mysql`): the store's `<schema>_*` tables (which must be migrated; this never
 * migrates), their payloads rewritten under `codecs[0]`, the others decoding what they wrote.
 */
export async function reencryptMysql(
  executor: SqlExecutor,
  schema: string,
  codecs: readonly WorkflowPayloadCodec[],
  options: WorkflowReencryptOptions,
): Promise<WorkflowReencryptResult> {
  const chain = new PayloadCodecChain({ codecs, allowUnencoded: true });
  const store = new MySqlWorkflowStore({ executor, schema, migrate: false });
  await store.init();
  try {
    return await new WorkflowStorage(store, { codecs: chain }).reencrypt(options, () => Date.now());
  } finally {
    await store.close();
  }
}
