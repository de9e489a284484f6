import type { SqlExecutor } from '../sql/sql-executor.js';
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
  /**
   * How `ctx.transaction()` opens its transactions, and so what its callbacks get as `tx`. Default:
   * the executor's (with `fromPg()`, a `pg` client). An ORM's, to get its own handle:
   * `typeormTransactions(dataSource)`, `prismaTransactions(prisma)`, `drizzleTransactions(db)`,
   * `kyselyTransactions(db)` or `mikroOrmTransactions(em)`, over the store's database. Checked at
   * startup: an ORM on a database without the store's schema fails `init()`.
   */
  transactions?: Pick<SqlExecutor, 'transaction'>;
}
