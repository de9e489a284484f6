import type { WorkflowPayloadCodec } from '../codec/workflow-payload-codec.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import type { WorkflowReencryptOptions, WorkflowReencryptResult } from '../storage/payload-reencryption.js';
import { reencryptStore } from '../storage/reencrypt-store.js';
import { MySqlWorkflowStore } from './mysql-workflow.store.js';

/**
 * Re-encryption of a MySQL/MariaDB store (`nest-workflows reencrypt --mysql`): the store's
 * `<schema>_*` tables, which must be migrated already.
 */
export function reencryptMysql(
  executor: SqlExecutor,
  schema: string,
  codecs: readonly WorkflowPayloadCodec[],
  options: WorkflowReencryptOptions,
): Promise<WorkflowReencryptResult> {
  return reencryptStore(new MySqlWorkflowStore({ executor, schema, migrate: false }), codecs, options);
}
