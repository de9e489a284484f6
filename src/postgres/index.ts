// The `@nestjs/workflows/postgres` entry: the PostgreSQL store and its executor. Nothing here
// imports `pg`, not even its types: `fromPg()` takes any object shaped like a `pg` Pool.
export { PostgresWorkflowStore } from './postgres-workflow.store.js';
export type { PostgresWorkflowStoreOptions } from './postgres-store-options.js';
export {
  fromPg,
  fromPgClient,
  type PgClientLike,
  type PgNotificationLike,
  type PgPoolClientLike,
  type PgPoolLike,
  type PgResultLike,
} from './from-pg.js';
export { kyselyTransactions, type KyselyLike } from '../sql/handles/kysely-handle.js';
export {
  typeormTransactions,
  type TypeOrmEntityManagerLike,
  type TypeOrmQueryRunnerLike,
} from '../sql/handles/typeorm-handle.js';
export { drizzleTransactions, type DrizzleLike } from '../sql/handles/drizzle-handle.js';
export { prismaTransactions, type PrismaLike, type PrismaTransactionsOptions } from '../sql/handles/prisma-handle.js';
export { mikroOrmTransactions, type MikroOrmLike } from '../sql/handles/mikro-orm-handle.js';
export type { OrmTransactions } from '../sql/handles/handle-kind.js';
export { POSTGRES_JOURNAL_KEY_BYTES, POSTGRES_KEY_LIMITS } from './key-limits.js';
export { WorkflowSchemaError } from '../errors/workflow-schema.error.js';
export { WorkflowStoreStartupError, type WorkflowStoreStartupProblem } from '../errors/workflow-store-startup.error.js';
export type { SqlExecutor, SqlQueryOptions, SqlQueryResult } from '../sql/sql-executor.js';
export type { StoreKeyLimits as SqlKeyLimits } from '../storage/key-limits.js';
