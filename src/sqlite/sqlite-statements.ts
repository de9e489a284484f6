import type { SqliteDatabaseLike, SqliteStatementLike } from './sqlite-driver.js';

/** A row as both drivers return it: column name to value (numbers, strings, `null`). */
export type SqliteRow = Record<string, unknown>;

/**
 * Runs statements on one database handle, each text prepared once and kept (SQLite compiles a
 * statement in about as long as it runs a small one). Every call is synchronous: a sequence of them
 * between `BEGIN` and `COMMIT` with no `await` in between is one transaction that nothing else in
 * the process can enter.
 */
export class SqliteStatements {
  private readonly prepared = new Map<string, SqliteStatementLike>();

  constructor(readonly database: SqliteDatabaseLike) {}

  all<T = SqliteRow>(sql: string, params: readonly unknown[] = []): T[] {
    return this.statement(sql).all(...bindable(params)) as T[];
  }

  get<T = SqliteRow>(sql: string, params: readonly unknown[] = []): T | undefined {
    return (this.statement(sql).get(...bindable(params)) ?? undefined) as T | undefined;
  }

  /** Runs a statement that returns no rows; resolves to how many rows it changed. */
  run(sql: string, params: readonly unknown[] = []): number {
    return Number(this.statement(sql).run(...bindable(params)).changes);
  }

  /** Runs an `INSERT`; resolves to the rowid it gave the new row, or `null` when it inserted none. */
  insert(sql: string, params: readonly unknown[] = []): number | null {
    const result = this.statement(sql).run(...bindable(params));
    return Number(result.changes) === 0 ? null : Number(result.lastInsertRowid);
  }

  private statement(sql: string): SqliteStatementLike {
    let statement = this.prepared.get(sql);
    if (!statement) {
      statement = this.database.prepare(sql);
      this.prepared.set(sql, statement);
    }
    return statement;
  }
}

/** `params` as both drivers bind them: SQLite has no boolean (1 and 0 stand for them) and `undefined` is `NULL`. */
function bindable(params: readonly unknown[]): unknown[] {
  const values = params as unknown[];
  for (let index = 0; index < params.length; index++) {
    const value = params[index];
    if (typeof value === 'boolean' || value === undefined)
      return params.map((param) => (typeof param === 'boolean' ? Number(param) : (param ?? null)));
  }
  return values;
}

/** `?, ?, ?`: one placeholder per value. */
export function placeholders(count: number): string {
  return Array.from({ length: count }, () => '?').join(', ');
}
