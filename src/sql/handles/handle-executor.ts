import { isSqlExecutor, type SqlExecutor } from '../sql-executor.js';
import type { SqlPlaceholders } from './placeholders.js';
import type { TransactionHandleKind } from './handle-kind.js';
import { DRIZZLE_HANDLE } from './drizzle-handle.js';
import { KYSELY_HANDLE } from './kysely-handle.js';
import { MIKRO_ORM_HANDLE } from './mikro-orm-handle.js';
import { PRISMA_HANDLE } from './prisma-handle.js';
import { TYPEORM_HANDLE } from './typeorm-handle.js';

/** The handles `{ transaction }` takes besides a driver client, tried in this order. */
export const TRANSACTION_HANDLE_KINDS: readonly TransactionHandleKind[] = [
  PRISMA_HANDLE,
  KYSELY_HANDLE,
  MIKRO_ORM_HANDLE,
  DRIZZLE_HANDLE,
  TYPEORM_HANDLE,
];

/**
 * The executor for an application's `transaction` argument: a `SqlExecutor` as it is, an ORM's
 * transaction handle through its adapter, else what `driver` makes of it (the store's driver
 * client: a `pg` client, a `mysql2` connection).
 */
export function handleExecutor(
  handle: unknown,
  placeholders: SqlPlaceholders,
  driver: (handle: unknown) => SqlExecutor,
): SqlExecutor {
  // The libraries first: a TypeORM EntityManager also has query() and transaction().
  const kind = handleKind(handle);
  if (kind) return kind.executor(handle as object, placeholders);
  if (isSqlExecutor(handle)) return handle;
  return driver(handle);
}

/** The executor for an ORM's transaction handle, or `null` when `handle` is none of theirs. */
export function ormHandleExecutor(handle: unknown, placeholders: SqlPlaceholders): SqlExecutor | null {
  const kind = handleKind(handle);
  return kind ? kind.executor(handle as object, placeholders) : null;
}

function handleKind(handle: unknown): TransactionHandleKind | undefined {
  if (typeof handle !== 'object' || handle === null) return undefined;
  return TRANSACTION_HANDLE_KINDS.find((kind) => kind.matches(handle));
}

/** The library whose handle `handle` is, for messages (`fallback`: the store's driver client). */
export function handleLibrary(handle: unknown, fallback: string): string {
  return handleKind(handle)?.library ?? (isSqlExecutor(handle) ? 'SqlExecutor' : fallback);
}
