import type { WorkflowPayloadCodec } from '../codec/workflow-payload-codec.js';
import { withOperatorStorage } from '../storage/operator-storage.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import { SqliteWorkflowStore } from './sqlite-workflow.store.js';

/** An operator's tool on a SQLite store (`nest-workflows list --sqlite`...): the `<schema>_*` tables of the file at `path`, migrated already. */
export function operateSqlite<T>(
  path: string,
  schema: string,
  codecs: readonly WorkflowPayloadCodec[] | null,
  fn: (storage: WorkflowStorage) => Promise<T>,
): Promise<T> {
  return withOperatorStorage(new SqliteWorkflowStore({ path, schema, migrate: false }), codecs, fn);
}
