import type { SqlExecutor } from '../sql-executor.js';
import { queryResult, transactionExecutor, type TransactionHandleKind } from './handle-kind.js';

/** What the store uses of a Prisma client (structural: `@prisma/client` is never imported). */
export interface PrismaLike {
  $queryRawUnsafe(query: string, ...values: unknown[]): Promise<unknown>;
  $transaction?<T>(fn: (tx: PrismaLike) => Promise<T>, options?: { maxWait?: number; timeout?: number; isolationLevel?: string }): Promise<T>;
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
  executor(value) {
    const tx = value as PrismaLike;
    if (typeof tx.$disconnect === 'function') {
      throw new TypeError('`transaction` is a PrismaClient, not a transaction: pass the `tx` of `prisma.$transaction(async (tx) => ...)`.');
    }
    return prismaExecutor(tx);
  },
};

function prismaExecutor(tx: PrismaLike): SqlExecutor {
  return transactionExecutor(tx, async (sql, params) => {
    const rows = await tx.$queryRawUnsafe(sql, ...params);
    return queryResult(rows);
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
export function prismaTransactions(prisma: object, options: PrismaTransactionsOptions = {}): Pick<SqlExecutor, 'transaction'> {
  const client = prisma as PrismaLike;
  if (typeof client?.$transaction !== 'function' || typeof client.$disconnect !== 'function' || typeof client.$queryRawUnsafe !== 'function') {
    throw new TypeError('prismaTransactions() expects a PrismaClient (`new PrismaClient({ adapter })`).');
  }
  const settings = { timeout: options.timeout ?? 300_000, ...(options.maxWait !== undefined ? { maxWait: options.maxWait } : {}) };
  return { transaction: (fn) => client.$transaction!((tx) => fn(prismaExecutor(tx)), settings) };
}
