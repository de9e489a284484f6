// The parts of `pg` the PostgreSQL store uses, as structural types: `pg` itself is never imported,
// not even its types (its Pool, PoolClient and Client have these methods).

/** What the store reads of a `pg` result (structural: `pg` itself is never imported). */
export interface PgResultLike {
  rows: Record<string, unknown>[];
  rowCount: number | null;
}

/** A `pg` notification. */
export interface PgNotificationLike {
  channel: string;
  payload?: string;
}

/** A query as `pg` takes it: with a `name`, `pg` prepares it once per connection and reuses the plan. */
export interface PgQueryConfigLike {
  name?: string;
  text: string;
  values?: unknown[];
}

/** The `pg` client methods the store uses: `PoolClient` (and `Client`) have them. */
export interface PgClientLike {
  query(text: string | PgQueryConfigLike, values?: unknown[]): Promise<PgResultLike | PgResultLike[]>;
}

/** A client checked out of a pool. */
export interface PgPoolClientLike extends PgClientLike {
  /** Gives the client back; with an error (or `true`), the pool destroys it instead. */
  release(destroy?: Error | boolean): void;
  on(event: 'notification', listener: (message: PgNotificationLike) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
  removeListener(event: 'notification', listener: (message: PgNotificationLike) => void): unknown;
  removeListener(event: 'error', listener: (error: Error) => void): unknown;
  removeListener(event: 'end', listener: () => void): unknown;
}

/** The `pg` `Pool` methods the store uses. */
export interface PgPoolLike {
  query(text: string | PgQueryConfigLike, values?: unknown[]): Promise<PgResultLike | PgResultLike[]>;
  connect(): Promise<PgPoolClientLike>;
  /** What the pool was created with (read for messages only: which server it connects to). */
  options?: { host?: unknown; port?: unknown; database?: unknown; connectionString?: unknown };
}
