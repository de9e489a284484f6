// The `@nestjs/workflows/mysql` entry: the MySQL / MariaDB store and its executor. Nothing here
// imports `mysql2`, not even its types: `fromMysql2()` takes any object shaped like its promise pool.
export { MySqlWorkflowStore, type MySqlWorkflowStoreOptions } from './mysql-workflow.store.js';
export {
  fromMysql2,
  fromMysql2Connection,
  type FromMysql2Options,
  type Mysql2ConnectionLike,
  type Mysql2PoolConnectionLike,
  type Mysql2PoolLike,
  type Mysql2QueryResultLike,
} from './from-mysql2.js';
// The `transactions` option's functions: the same objects as the PostgreSQL entry's (the MySQL
// store asks each for `?` placeholders and READ COMMITTED transactions).
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
export { MYSQL_KEY_LIMITS } from './key-limits.js';
export type { WakePollInterval } from './mysql-wake-poller.js';
export type { EndPollInterval } from './mysql-end-poller.js';
export { WorkflowSchemaError } from '../errors/workflow-schema.error.js';
export { WorkflowStoreStartupError, type WorkflowStoreStartupProblem } from '../errors/workflow-store-startup.error.js';
export type { SqlExecutor, SqlQueryOptions, SqlQueryResult } from '../sql/sql-executor.js';
export type { StoreKeyLimits as SqlKeyLimits } from '../storage/key-limits.js';
