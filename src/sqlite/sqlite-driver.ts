// The driver seam of the SQLite store: the few methods it calls on a database handle, which both
// `better-sqlite3`'s `Database` and Node's own `node:sqlite` `DatabaseSync` (Node 22.5+) have. The
// store never imports either package's types, and loads one only when it opens a file itself.

/** What a statement's `run()` reports. */
export interface SqliteRunResultLike {
  changes: number | bigint;
  lastInsertRowid: number | bigint;
}

/** A prepared statement, as both drivers hand it over. Parameters are positional (`?`). */
export interface SqliteStatementLike {
  run(...params: unknown[]): SqliteRunResultLike;
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}

/**
 * An open SQLite database: a `better-sqlite3` `Database` or a `node:sqlite` `DatabaseSync`, or
 * anything with these methods that runs each call synchronously on one connection.
 */
export interface SqliteDatabaseLike {
  prepare(sql: string): SqliteStatementLike;
  exec(sql: string): unknown;
  close(): unknown;
  /** `better-sqlite3`: whether a transaction is open on the connection. */
  readonly inTransaction?: boolean;
  /** `node:sqlite` (Node 22.16+): the same. */
  readonly isTransaction?: boolean;
}

/** Whether `value` has the methods of `SqliteDatabaseLike`. */
export function isSqliteDatabase(value: unknown): value is SqliteDatabaseLike {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Partial<SqliteDatabaseLike>;
  return (
    typeof candidate.prepare === 'function' &&
    typeof candidate.exec === 'function' &&
    typeof candidate.close === 'function'
  );
}

/** Whether a transaction is open on `database`, or `undefined` when its driver doesn't say. */
export function transactionOpen(database: SqliteDatabaseLike): boolean | undefined {
  return database.inTransaction ?? database.isTransaction;
}

type DatabaseConstructor = new (path: string) => SqliteDatabaseLike;

/**
 * Opens the database file at `path` with `better-sqlite3` when the application has it installed
 * (an optional peer), else with `node:sqlite` where the runtime has it. Fails naming both.
 */
export async function openSqliteFile(path: string, store: string): Promise<SqliteDatabaseLike> {
  const failures: string[] = [];
  try {
    const module = (await import('better-sqlite3' as string)) as { default?: DatabaseConstructor };
    const Database = (module.default ?? module) as DatabaseConstructor;
    return new Database(path);
  } catch (error) {
    if (!isMissingModule(error)) throw error;
    failures.push(`better-sqlite3: ${(error as Error).message}`);
  }
  try {
    const { DatabaseSync } = (await import('node:sqlite' as string)) as { DatabaseSync: DatabaseConstructor };
    return new DatabaseSync(path);
  } catch (error) {
    if (!isMissingModule(error)) throw error;
    failures.push(`node:sqlite: ${(error as Error).message}`);
  }
  throw new Error(
    `${store}: no SQLite driver to open ${JSON.stringify(path)}. Install better-sqlite3 (npm install better-sqlite3@12), ` +
      `or run on Node.js 22.5 or later, which has node:sqlite. (${failures.join('; ')})`,
  );
}

/** Whether `error` says a module could not be found (not that it failed while loading). */
function isMissingModule(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND' || code === 'ERR_UNKNOWN_BUILTIN_MODULE';
}
