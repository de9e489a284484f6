import type { SqlWorkflowStoreOptions } from '../sql/sql-workflow-store.js';
import type { Duration } from '../time/duration.js';

/**
 * What `new PostgresWorkflowStore(options)` takes: `executor` is `fromPg(pool)`; `schema` is the
 * PostgreSQL schema, created when the store migrates (with an advisory lock held while it does).
 */
export interface PostgresWorkflowStoreOptions extends SqlWorkflowStoreOptions {
  /**
   * How long startup (`init()`) waits for the server's first answer before failing with an error
   * that names the server: a host that accepts connections and never answers (a wrong port, a
   * proxy in front of a stopped server) would otherwise hang startup. Migrating, once the server
   * answered, is not limited. Also set `connectionTimeoutMillis` on your Pool, so every later
   * connection attempt is bounded too. Default `'5s'`.
   */
  startupTimeout?: Duration;
}
