/**
 * The few ways the SQL dialects differ in statement text that the shared code (list filters,
 * migrations' history) needs to know: how a positional parameter is written, how an identifier is
 * quoted, and where a store's table lives. Everything that differs by algorithm (locks, returning
 * rows, batches, notifications) stays in each store's own folder.
 */
export interface SqlDialect {
  /** `$3` on PostgreSQL, `?` on MySQL: the parameter at 1-based `index`. */
  placeholder(index: number): string;
  /** Quotes a name that `validateSchemaName()` accepted or that is the store's own constant. */
  quote(name: string): string;
  /**
   * A store table: `"schema".table` on PostgreSQL (the schema is a namespace), `` `schema_table` ``
   * on MySQL (the tables share the connection's database and start with the schema's name).
   */
  table(schema: string, table: string): string;
}

/** Builds a statement's parameter list while its text is written: `add(value)` returns the placeholder. */
export class SqlParams {
  readonly values: unknown[] = [];

  constructor(private readonly dialect: SqlDialect) {}

  add(value: unknown): string {
    this.values.push(value);
    return this.dialect.placeholder(this.values.length);
  }

  /** One placeholder per value, comma-separated (`IN (...)`). Never call it with an empty list. */
  list(values: readonly unknown[]): string {
    return values.map((value) => this.add(value)).join(', ');
  }
}
