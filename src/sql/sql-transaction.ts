/** One connection's part in `runTransaction()`: how to begin, commit, roll back, and give it back. */
export interface TransactionSession {
  begin(): Promise<void>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
  /** Gives the connection back; `broken` (why it can't be trusted) when a rollback failed. */
  end(broken: Error | undefined): void;
}

/**
 * A session's commit and rollback for a handle that refuses statements from the moment either is
 * sent (`ended.done`), not only once the connection is back in the pool: a statement sent later (a
 * callback still running after its step timed out) would run on its own and commit.
 */
export function endingStatements(
  ended: { done: boolean },
  send: (sql: 'COMMIT' | 'ROLLBACK') => Promise<unknown>,
): Pick<TransactionSession, 'commit' | 'rollback'> {
  const finish = async (sql: 'COMMIT' | 'ROLLBACK') => {
    ended.done = true;
    await send(sql);
  };
  return { commit: () => finish('COMMIT'), rollback: () => finish('ROLLBACK') };
}

/**
 * Runs `fn` in a transaction on one connection: commits when it resolves, rolls back when it throws
 * (and rethrows), and gives the connection back either way; a connection whose rollback failed is
 * handed back as broken, so the pool never lends it again.
 */
export async function runTransaction<T>(session: TransactionSession, fn: () => Promise<T>): Promise<T> {
  let broken: Error | undefined;
  try {
    await session.begin();
    const result = await fn();
    await session.commit();
    return result;
  } catch (error) {
    try {
      await session.rollback();
    } catch (rollbackError) {
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    }
    throw error;
  } finally {
    session.end(broken);
  }
}
