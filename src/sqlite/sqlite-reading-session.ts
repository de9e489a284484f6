import type { WorkflowPayloadCodec } from '../codec/workflow-payload-codec.js';
import { withReadingSession } from '../storage/reading-session.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import { SqliteWorkflowStore } from './sqlite-workflow.store.js';

/** A reading session (`nest-workflows export-history --sqlite`) on the `<schema>_*` tables of the file at `path`, migrated already. */
export function withSqliteReading<T>(
  path: string,
  schema: string,
  codecs: readonly WorkflowPayloadCodec[] | null,
  read: (storage: WorkflowStorage) => Promise<T>,
): Promise<T> {
  return withReadingSession(new SqliteWorkflowStore({ path, schema, migrate: false }), codecs, read);
}
