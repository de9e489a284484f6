import type { SqlExecutor } from '../sql-executor.js';
import {
  ormTransactions,
  queryResult,
  transactionExecutor,
  type OrmTransactions,
  type TransactionHandleKind,
} from './handle-kind.js';

/** What the store uses of a TypeORM `QueryRunner` (structural: `typeorm` is never imported). */
export interface TypeOrmQueryRunnerLike {
  readonly isTransactionActive: boolean;
  readonly isReleased: boolean;
  query(
    query: string,
    parameters: unknown[] | undefined,
    useStructuredResult: true,
  ): Promise<{ records: unknown[]; affected?: number; raw?: unknown }>;
}

/** What the store uses of a TypeORM `EntityManager`. */
export interface TypeOrmEntityManagerLike {
  readonly queryRunner?: TypeOrmQueryRunnerLike;
  readonly connection: unknown;
  transaction<T>(fn: (manager: TypeOrmEntityManagerLike) => Promise<T>): Promise<T>;
}

/** `dataSource.transaction(fn)`, or with an isolation level first. */
interface TypeOrmDataSourceTransaction {
  <T>(fn: (manager: TypeOrmEntityManagerLike) => Promise<T>): Promise<T>;
  <T>(isolationLevel: 'READ COMMITTED', fn: (manager: TypeOrmEntityManagerLike) => Promise<T>): Promise<T>;
}

const isQueryRunner = (value: object): value is TypeOrmQueryRunnerLike =>
  typeof (value as { query?: unknown }).query === 'function' &&
  typeof (value as { isTransactionActive?: unknown }).isTransactionActive === 'boolean' &&
  'manager' in value;

// Not `'queryRunner' in value`: a manager made without a query runner (a DataSource's default
// `manager`) has no such property at all, and would otherwise pass for a SqlExecutor (it has
// query() and transaction()) whose statements each commit on their own.
const isEntityManager = (value: object): value is TypeOrmEntityManagerLike =>
  'connection' in value &&
  typeof (value as { transaction?: unknown }).transaction === 'function' &&
  typeof (value as { getRepository?: unknown }).getRepository === 'function';

/** A `DataSource` (never a transaction: it too has query() and transaction()). */
const isDataSource = (value: object): boolean =>
  typeof (value as { createQueryRunner?: unknown }).createQueryRunner === 'function' &&
  'manager' in value &&
  typeof (value as { transaction?: unknown }).transaction === 'function';

/**
 * TypeORM: a `QueryRunner` after `startTransaction()`, or the `EntityManager` of a transaction
 * (`dataSource.transaction(async (manager) => ...)`, or `queryRunner.manager`). The store's
 * statements go through the query runner, so they run on the transaction's connection.
 */
export const TYPEORM_HANDLE: TransactionHandleKind = {
  library: 'TypeORM',
  matches: (value) => isQueryRunner(value) || isEntityManager(value) || isDataSource(value),
  executor(value) {
    const runner = isQueryRunner(value) ? value : isEntityManager(value) ? value.queryRunner : undefined;
    if (!runner || !runner.isTransactionActive || runner.isReleased) {
      throw new TypeError(
        "`transaction` is a TypeORM DataSource, EntityManager or QueryRunner that is not in a transaction, so the store's statements would " +
          'commit on their own. Pass the manager of `dataSource.transaction(async (manager) => ...)`, or a QueryRunner after `startTransaction()`.',
      );
    }
    return typeormExecutor(value, runner);
  },
};

function typeormExecutor(handle: unknown, runner: TypeOrmQueryRunnerLike): SqlExecutor {
  return transactionExecutor(handle, async (sql, params) => {
    const result = await runner.query(sql, [...params], true);
    return queryResult(result.records, result.affected, (result.raw as { insertId?: unknown } | undefined)?.insertId);
  });
}

/**
 * `ctx.transaction()` through TypeORM: each transactional step runs in `dataSource.transaction()`,
 * and its callback gets that transaction's `EntityManager` (so `manager.getRepository(Order)`
 * works in it). Pass it as the store's `transactions` option.
 */
export function typeormTransactions(dataSource: object): OrmTransactions {
  const source = dataSource as { transaction?: TypeOrmDataSourceTransaction; manager?: unknown };
  if (typeof source?.transaction !== 'function' || !source.manager) {
    throw new TypeError('typeormTransactions() expects a TypeORM DataSource (`new DataSource({ type: ... })`).');
  }
  return ormTransactions((dialect) => ({
    transaction: (fn) => {
      const body = (manager: TypeOrmEntityManagerLike) => {
        if (!manager.queryRunner)
          throw new TypeError('TypeORM handed the transaction a manager without a query runner.');
        return fn(typeormExecutor(manager, manager.queryRunner));
      };
      return dialect.readCommitted ? source.transaction!('READ COMMITTED', body) : source.transaction!(body);
    },
  }));
}
