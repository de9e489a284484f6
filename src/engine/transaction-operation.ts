import { findInErrorChain } from '../errors/driver-error-chain.js';
import type { ExecutionHost } from './execution-host.js';
import type { Compensation } from './saga.js';
import { runAttempt, runStepWith } from './step-operation.js';
import type { WorkflowStepRun, WorkflowTransactionOptions } from './workflow-context.js';

/** How many times in a row a transaction that lost to a concurrent one is run again at once, before that counts as a failed attempt. */
export const CONFLICT_RETRIES = 5;

/**
 * `ctx.transaction()`: a step whose attempt runs `fn` in a transaction of the store's database and
 * records the step's result in that same transaction, so the callback's writes and the journal
 * entry commit together, or neither does (a crash before the commit leaves nothing, and the step
 * runs again). A transaction that fails on a serialization failure or a deadlock is run again at
 * once (up to `CONFLICT_RETRIES` times) before the failure counts as an attempt; everything else
 * (retries, timeout, compensation, replay) is `ctx.step()`'s.
 */
export function runTransaction<T, Tx>(
  host: ExecutionHost,
  compensations: Map<string, Compensation>,
  name: string,
  fn: (tx: Tx, run: WorkflowStepRun) => T | Promise<T>,
  options: WorkflowTransactionOptions<T> = {},
): Promise<T> {
  const unsupported = host.transactionsUnsupported();
  if (unsupported !== null) {
    return Promise.reject(
      new TypeError(
        `ctx.transaction("${name}") needs a store that runs transactions on its own database (PostgresWorkflowStore, ` +
          `MySqlWorkflowStore, SqliteWorkflowStore); ${unsupported} can't. Use ctx.step("${name}", ...) with this store, or configure a SQL store.`,
      ),
    );
  }
  return runStepWith<T>(host, compensations, name, options, async (attempt, timeout, finish) => {
    for (let conflicts = 0; ; conflicts++) {
      try {
        return await host.runTransaction(async (handle, write) => {
          const value = finish.json(await runAttempt(host, name, (run) => fn(handle as Tx, run), attempt, timeout));
          const entry = finish.entry(value);
          await write(entry);
          return { value, written: entry };
        }, timeout);
      } catch (error) {
        if (conflicts >= CONFLICT_RETRIES || !isTransactionConflict(error) || host.stopReason() !== null) throw error;
      }
    }
  });
}

/**
 * Whether `error` says the database aborted the transaction for a conflict with another one, which
 * running it again resolves: PostgreSQL's serialization failure (40001) and deadlock (40P01),
 * MySQL's deadlock (1213), Prisma's P2034. Looks through `cause`, TypeORM's `driverError` and
 * Prisma's driver adapter error (`meta.driverAdapterError.cause.originalCode`).
 */
export function isTransactionConflict(error: unknown): boolean {
  const conflict = findInErrorChain(error, ({ code, errno, originalCode }) => {
    for (const value of [code, originalCode])
      if (value === '40001' || value === '40P01' || value === 'ER_LOCK_DEADLOCK' || value === 'P2034') return true;
    return errno === 1213 || originalCode === '1213' ? true : undefined;
  });
  return conflict === true;
}
