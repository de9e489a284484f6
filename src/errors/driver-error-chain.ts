/** The fields where database drivers and ORMs put the database's own error and its code. */
export interface DriverErrorFields {
  code?: unknown;
  errno?: unknown;
  message?: unknown;
  /** Prisma's driver adapter error. */
  originalCode?: unknown;
  originalMessage?: unknown;
  /** Prisma's known request error (P2010 wraps the database's code in `meta.code`). */
  meta?: { code?: unknown; message?: unknown; driverAdapterError?: unknown };
}

/**
 * Visits `error` and every error an ORM wrapped inside it, breadth first, until `visit` returns
 * something other than `undefined`: `cause` (Drizzle, standard), `driverError` (TypeORM) and Prisma's
 * `meta.driverAdapterError`. Each object is visited once, so a cycle of causes ends.
 */
export function findInErrorChain<T>(
  error: unknown,
  visit: (fields: DriverErrorFields) => T | undefined,
): T | undefined {
  const seen = new Set<unknown>();
  const queue: unknown[] = [error];
  while (queue.length > 0) {
    const current = queue.shift();
    if (typeof current !== 'object' || current === null || seen.has(current)) continue;
    seen.add(current);
    const fields = current as DriverErrorFields & { cause?: unknown; driverError?: unknown };
    const found = visit(fields);
    if (found !== undefined) return found;
    queue.push(fields.cause, fields.driverError, fields.meta?.driverAdapterError);
  }
  return undefined;
}
