// The `@nestjs/workflows/sqlite` entry: the embedded SQLite store. Nothing here imports
// `better-sqlite3` or `node:sqlite`, not even their types: the store takes any database shaped like
// theirs, and loads one only to open a file itself.
export { SqliteWorkflowStore, type SqliteWorkflowStoreOptions } from './sqlite-workflow.store.js';
export type { SqliteDatabaseLike, SqliteRunResultLike, SqliteStatementLike } from './sqlite-driver.js';
export type { ChangePollInterval } from './sqlite-change-feed.js';
export { WorkflowSchemaError } from '../errors/workflow-schema.error.js';
export type { StoreKeyLimits as SqlKeyLimits } from '../storage/key-limits.js';
