import type { SqlExecutor } from '../sql-executor.js';
import type { SqlPlaceholders } from './placeholders.js';
import {
  ormTransactions,
  queryResult,
  transactionExecutor,
  type OrmTransactions,
  type TransactionHandleKind,
} from './handle-kind.js';

/** What the store uses of a Prisma client (structural: `@prisma/client` is never imported). */
export interface PrismaLike {
  $queryRawUnsafe(query: string, ...values: unknown[]): Promise<unknown>;
  $executeRawUnsafe(query: string, ...values: unknown[]): Promise<number>;
  $transaction?<T>(
    fn: (tx: PrismaLike) => Promise<T>,
    options?: { maxWait?: number; timeout?: number; isolationLevel?: string },
  ): Promise<T>;
  /** A PrismaClient has it; its transaction clients don't. */
  $disconnect?(): Promise<void>;
}

/**
 * Prisma's interactive transaction client (`prisma.$transaction(async (tx) => ...)`): the store's
 * statements go through `tx.$queryRawUnsafe()`, whose placeholders are the database's own (`$1`
 * on PostgreSQL, `?` on MySQL), as the store writes them.
 */
export const PRISMA_HANDLE: TransactionHandleKind = {
  library: 'Prisma',
  matches: (value) => typeof (value as Partial<PrismaLike>).$queryRawUnsafe === 'function',
  executor(value, placeholders) {
    const tx = value as PrismaLike;
    if (typeof tx.$disconnect === 'function') {
      throw new TypeError(
        '`transaction` is a PrismaClient, not a transaction: pass the `tx` of `prisma.$transaction(async (tx) => ...)`.',
      );
    }
    return prismaExecutor(tx, placeholders);
  },
};

/** A MySQL statement that changes rows: Prisma tells its count through `$executeRawUnsafe` only. */
const MYSQL_WRITE = /^\s*(INSERT|UPDATE|DELETE|REPLACE)\b/i;

function prismaExecutor(tx: PrismaLike, placeholders: SqlPlaceholders): SqlExecutor {
  return transactionExecutor(tx, async (sql, params) => {
    // PostgreSQL: the store's writes say what they changed with RETURNING, so every statement is a query.
    if (placeholders === 'dollar' || !MYSQL_WRITE.test(sql))
      return queryResult(await tx.$queryRawUnsafe(sql, ...params));
    // MySQL: the rows changed (matched, under the driver's FOUND_ROWS), and for an INSERT the id it
    // allocated, which Prisma's raw API does not return: LAST_INSERT_ID() on the same connection.
    const count = await tx.$executeRawUnsafe(sql, ...params);
    if (count === 0 || !/^\s*INSERT\b/i.test(sql)) return queryResult([], count);
    const [row] = (await tx.$queryRawUnsafe('SELECT LAST_INSERT_ID() AS id')) as Array<{ id: unknown }>;
    return queryResult([], count, row?.id);
  });
}

/** How Prisma runs the transactions of `ctx.transaction()` (its `$transaction` options). */
export interface PrismaTransactionsOptions {
  /** How long a step's transaction may run before Prisma aborts it, in ms. Default 300000 (Prisma's own default is 5000). */
  timeout?: number;
  /** How long to wait for a connection, in ms. Default Prisma's (2000). */
  maxWait?: number;
}

/**
 * `ctx.transaction()` through Prisma: each transactional step runs in an interactive
 * `prisma.$transaction()`, and its callback gets Prisma's transaction client. Pass it as the
 * store's `transactions` option.
 */
export function prismaTransactions(prisma: object, options: PrismaTransactionsOptions = {}): OrmTransactions {
  const client = prisma as PrismaLike;
  if (
    typeof client?.$transaction !== 'function' ||
    typeof client.$disconnect !== 'function' ||
    typeof client.$queryRawUnsafe !== 'function'
  ) {
    throw new TypeError('prismaTransactions() expects a PrismaClient (`new PrismaClient({ adapter })`).');
  }
  return ormTransactions((dialect) => {
    const settings = {
      timeout: options.timeout ?? 300_000,
      ...(options.maxWait !== undefined ? { maxWait: options.maxWait } : {}),
      ...(dialect.readCommitted ? { isolationLevel: 'ReadCommitted' } : {}),
    };
    return {
      transaction: (fn) => client.$transaction!((tx) => fn(prismaExecutor(tx, dialect.placeholders)), settings),
    };
  });
}
