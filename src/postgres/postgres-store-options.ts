import type { SqlExecutor } from '../sql/sql-executor.js';
import type { Duration } from '../time/duration.js';

/** What `new PostgresWorkflowStore(options)` takes. */
export interface PostgresWorkflowStoreOptions {
  /**
   * How the store reaches PostgreSQL: `fromPg(pool)` over your `pg` Pool. The application owns the
   * pool and ends it; the store only checks out connections (its transactions, one held LISTEN
   * connection while something listens).
   */
  executor: SqlExecutor;
  /**
   * The PostgreSQL schema holding the store's tables, created when the store migrates. Lowercase
   * letters, digits and underscores, not starting with a digit, at most 40 characters. Keep it for
   * the store alone. Default `'nest_workflows'`.
   */
  schema?: string;
  /**
   * Apply pending migrations at startup (`init()`), under an advisory lock so processes starting
   * together migrate once. With `false`, startup fails with a `WorkflowSchemaError` while the schema
   * is behind this version of the package: apply them with `npx nest-workflows migrate`, or with
   * your own tool from `PostgresWorkflowStore.migrationSql()`. Default: `true`, except when
   * `NODE_ENV` is `production`.
   */
  migrate?: boolean;
  /**
   * How long startup (`init()`) waits for the server's first answer before failing with an error
   * that names the server: a host that accepts connections and never answers (a wrong port, a
   * proxy in front of a stopped server) would otherwise hang startup. Migrating, once the server
   * answered, is not limited. Also set `connectionTimeoutMillis` on your Pool, so every later
   * connection attempt is bounded too. Default `'5s'`.
   */
  startupTimeout?: Duration;
}
