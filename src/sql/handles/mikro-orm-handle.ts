import type { SqlExecutor } from '../sql-executor.js';
import {
  ormTransactions,
  queryResult,
  transactionExecutor,
  type OrmTransactions,
  type TransactionHandleKind,
} from './handle-kind.js';
import { splitStatement, type SqlPlaceholders } from './placeholders.js';

/** What the store uses of a MikroORM (SQL driver) `EntityManager` (structural). */
export interface MikroOrmLike {
  getTransactionContext(): MikroOrmKnexTransaction | undefined;
  transactional<T>(fn: (em: MikroOrmLike) => Promise<T>, options?: { isolationLevel?: 'read committed' }): Promise<T>;
  getConnection(): unknown;
}

/** The knex transaction MikroORM 6 keeps as its transaction context. */
interface MikroOrmKnexTransaction {
  raw(sql: string, bindings: readonly unknown[]): PromiseLike<unknown>;
}

const isMikroOrm = (value: object): boolean =>
  typeof (value as Partial<MikroOrmLike>).getTransactionContext === 'function' &&
  typeof (value as Partial<MikroOrmLike>).transactional === 'function';

/**
 * A MikroORM `EntityManager` inside `em.transactional(async (em) => ...)` (or after
 * `em.begin()`): the store's statements run on its transaction context (a knex transaction), with
 * `?` bindings.
 */
export const MIKRO_ORM_HANDLE: TransactionHandleKind = {
  library: 'MikroORM',
  matches: isMikroOrm,
  executor(value, placeholders) {
    const em = value as MikroOrmLike;
    if (!em.getTransactionContext()) {
      throw new TypeError(
        '`transaction` is a MikroORM EntityManager outside a transaction: pass the `em` of `em.transactional(async (em) => ...)`.',
      );
    }
    return mikroOrmExecutor(em, placeholders);
  },
};

function mikroOrmExecutor(em: MikroOrmLike, placeholders: SqlPlaceholders): SqlExecutor {
  return transactionExecutor(em, async (text, params) => {
    const trx = em.getTransactionContext();
    if (!trx || typeof trx.raw !== 'function')
      throw new TypeError(
        "The MikroORM EntityManager's transaction has ended, or its context is not a knex transaction.",
      );
    const { texts, values } = splitStatement(text, params, placeholders);
    // knex reads `?` as a binding and `??` as an identifier; none of the store's statements has either.
    const result = (await trx.raw(texts.join('?'), values.map(binding))) as unknown;
    if (Array.isArray(result)) {
      // mysql2 or mariadb through knex: [rows or header, fields].
      const [first] = result as unknown[];
      if (Array.isArray(first)) return queryResult(first);
      const header = first as { affectedRows?: number; insertId?: number | bigint } | undefined;
      return queryResult([], header?.affectedRows ?? 0, header?.insertId);
    }
    const { rows, rowCount } = result as { rows?: unknown; rowCount?: number | null };
    return queryResult(rows, rowCount ?? undefined);
  });
}

/** knex expands an array binding into a list of values: an array parameter goes as a PostgreSQL array literal instead. */
function binding(value: unknown): unknown {
  return Array.isArray(value) ? `{${value.map((item) => JSON.stringify(String(item))).join(',')}}` : value;
}

/**
 * `ctx.transaction()` through MikroORM: each transactional step runs in `em.transactional()`, and
 * its callback gets that transaction's `EntityManager` (a fork: it flushes before the commit).
 * Pass it as the store's `transactions` option.
 */
export function mikroOrmTransactions(em: object): OrmTransactions {
  if (!em || !isMikroOrm(em))
    throw new TypeError('mikroOrmTransactions() expects a MikroORM EntityManager (`orm.em`).');
  const manager = em as MikroOrmLike;
  return ormTransactions((dialect) => {
    const options = dialect.readCommitted ? { isolationLevel: 'read committed' as const } : undefined;
    return {
      transaction: (fn) => manager.transactional((tx) => fn(mikroOrmExecutor(tx, dialect.placeholders)), options),
    };
  });
}
