import { randomUUID } from 'node:crypto';
import type { SqlExecutor } from '../sql-executor.js';
import {
  ormTransactions,
  queryResult,
  transactionExecutor,
  type OrmTransactions,
  type TransactionHandleKind,
} from './handle-kind.js';

/** What the store uses of a Kysely `Transaction` (structural: `kysely` itself is never imported). */
export interface KyselyLike {
  readonly isTransaction: boolean;
  executeQuery(query: {
    sql: string;
    parameters: readonly unknown[];
    query: unknown;
    queryId: { queryId: string };
  }): Promise<{ rows: unknown[]; numAffectedRows?: bigint; insertId?: bigint }>;
  transaction(): KyselyTransactionBuilderLike;
}

interface KyselyTransactionBuilderLike {
  execute<T>(fn: (trx: KyselyLike) => Promise<T>): Promise<T>;
  setIsolationLevel(level: 'read committed'): KyselyTransactionBuilderLike;
}

/**
 * A Kysely `Transaction` (`db.transaction().execute(async (trx) => ...)`): the store's statements
 * go through `trx.executeQuery()` as raw compiled queries (what `CompiledQuery.raw()` builds).
 */
export const KYSELY_HANDLE: TransactionHandleKind = {
  library: 'Kysely',
  matches: (value) =>
    typeof (value as Partial<KyselyLike>).executeQuery === 'function' &&
    typeof (value as Partial<KyselyLike>).isTransaction === 'boolean',
  executor(value) {
    const trx = value as KyselyLike;
    if (!trx.isTransaction) {
      throw new TypeError(
        '`transaction` is a Kysely instance, not a transaction: pass the `trx` of `db.transaction().execute(async (trx) => ...)`.',
      );
    }
    return kyselyExecutor(trx);
  },
};

function kyselyExecutor(trx: KyselyLike): SqlExecutor {
  return transactionExecutor(trx, async (sql, parameters) => {
    const result = await trx.executeQuery({
      sql,
      parameters,
      query: { kind: 'RawNode', sqlFragments: [sql], parameters: [] },
      queryId: { queryId: randomUUID() },
    });
    return queryResult(result.rows, result.numAffectedRows, result.insertId);
  });
}

/**
 * `ctx.transaction()` through Kysely: each transactional step runs in `db.transaction()`, and its
 * callback gets Kysely's `trx`. Pass it as the store's `transactions` option.
 *
 * @example new PostgresWorkflowStore({ executor: fromPg(pool), transactions: kyselyTransactions(db) })
 */
export function kyselyTransactions(db: object): OrmTransactions {
  const kysely = db as KyselyLike;
  if (typeof kysely?.transaction !== 'function' || !KYSELY_HANDLE.matches(kysely)) {
    throw new TypeError('kyselyTransactions() expects a Kysely instance (`new Kysely({ dialect })`).');
  }
  return ormTransactions((dialect) => {
    const begin = () =>
      dialect.readCommitted ? kysely.transaction().setIsolationLevel('read committed') : kysely.transaction();
    return { transaction: (fn) => begin().execute((trx) => fn(kyselyExecutor(trx))) };
  });
}
