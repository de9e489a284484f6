import type { WorkflowPayloadCodec } from '../codec/workflow-payload-codec.js';
import type { WorkflowReencryptOptions, WorkflowReencryptResult } from '../storage/payload-reencryption.js';
import { reencryptStore } from '../storage/reencrypt-store.js';
import { SqliteWorkflowStore } from './sqlite-workflow.store.js';

/**
 * Re-encryption of a SQLite store (`nest-workflows reencrypt --sqlite`): the `<schema>_*` tables of
 * the database file at `path`, which must be migrated already.
 */
export function reencryptSqlite(
  path: string,
  schema: string,
  codecs: readonly WorkflowPayloadCodec[],
  options: WorkflowReencryptOptions,
): Promise<WorkflowReencryptResult> {
  return reencryptStore(new SqliteWorkflowStore({ path, schema, migrate: false }), codecs, options);
}
