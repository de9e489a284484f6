import { MySqlWorkflowStore } from './mysql-workflow.store.js';
import type { SqlExecutor } from '../sql/sql-executor.js';

/**
 * The MySQL store's migrations for tools outside the application (`nest-workflows`), so they
 * never construct the store themselves.
 */

/** Every migration as one SQL script for `schema`; throws a `WorkflowSchemaError` for an invalid schema name. */
export function mysqlMigrationScript(schema: string): string {
  return MySqlWorkflowStore.migrationSql(schema);
}

/** Applies the pending migrations under the migration lock; resolves to the labels it applied. */
export function migrateMysql(executor: SqlExecutor, schema: string): Promise<string[]> {
  return new MySqlWorkflowStore({ executor, schema, migrate: true }).migrate();
}
