import type { WorkflowPayloadCodec } from '../codec/workflow-payload-codec.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import type { WorkflowReencryptOptions, WorkflowReencryptResult } from '../storage/payload-reencryption.js';
import { reencryptStore } from '../storage/reencrypt-store.js';
import { PostgresWorkflowStore } from './postgres-workflow.store.js';

/**
 * Re-encryption of a PostgreSQL store (`nest-workflows reencrypt`): the store on `schema`, which
 * must be migrated already.
 */
export function reencryptPostgres(
  executor: SqlExecutor,
  schema: string,
  codecs: readonly WorkflowPayloadCodec[],
  options: WorkflowReencryptOptions,
): Promise<WorkflowReencryptResult> {
  return reencryptStore(new PostgresWorkflowStore({ executor, schema, migrate: false }), codecs, options);
}
