import { SqliteWorkflowStore } from './sqlite-workflow.store.js';

/**
 * The SQLite store's migrations for tools outside the application (`nest-workflows`), so they
 * never construct the store themselves.
 */

/** Every migration as one SQL script for `schema`; throws a `WorkflowSchemaError` for an invalid schema name. */
export function sqliteMigrationScript(schema: string): string {
  return SqliteWorkflowStore.migrationSql(schema);
}

/** Applies the pending migrations to the database file at `path` (created if missing); resolves to the labels it applied. */
export async function migrateSqlite(path: string, schema: string): Promise<string[]> {
  const store = new SqliteWorkflowStore({ path, schema, migrate: true });
  try {
    return await store.migrate();
  } finally {
    await store.close();
  }
}
