import type { SqlExecutor } from '../sql/sql-executor.js';
import { PostgresWorkflowStore } from './postgres-workflow.store.js';

/**
 * The PostgreSQL store's migrations for tools outside the application (`nest-workflows`), so they
 * never construct the store themselves.
 */

/** Every migration as one SQL script for `schema`; throws a `TypeError` for an invalid schema name. */
export function postgresMigrationSql(schema: string): string {
  return PostgresWorkflowStore.migrationSql(schema);
}

/** Applies the pending migrations under the migration lock; resolves to the labels it applied. */
export function migratePostgres(executor: SqlExecutor, schema: string): Promise<string[]> {
  return new PostgresWorkflowStore({ executor, schema, migrate: true }).migrate();
}
