/** InnoDB's answers to lock contention: the transaction (or statement) was rolled back, and may simply run again. */
const DEADLOCK = 1213;
const LOCK_WAIT_TIMEOUT = 1205;

/** Whether `error` is a deadlock or a lock-wait timeout (by MySQL error number or mysql2's code). */
export function isLockContention(error: unknown): boolean {
  const { errno, code } = (error ?? {}) as { errno?: unknown; code?: unknown };
  return (
    errno === DEADLOCK || errno === LOCK_WAIT_TIMEOUT || code === 'ER_LOCK_DEADLOCK' || code === 'ER_LOCK_WAIT_TIMEOUT'
  );
}

/**
 * Runs `attempt` again when InnoDB rolled it back for a deadlock or a lock-wait timeout, after a
 * short random pause that grows with each try, up to `tries` times. Only for work that is safe to
 * repeat: a transaction of the store's own (all of it was rolled back) or a single statement,
 * never a statement in the application's transaction (a deadlock rolled that back too).
 */
export async function retryOnLockContention<T>(attempt: () => Promise<T>, tries = 8): Promise<T> {
  for (let round = 1; ; round++) {
    try {
      return await attempt();
    } catch (error) {
      if (round >= tries || !isLockContention(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * round));
    }
  }
}

/** MySQL 8.0's answer to a NOWAIT locking read that met a locked row (MariaDB answers 1205). */
const LOCK_NOWAIT = 3572;

/**
 * Whether `error` is a locking read's NOWAIT meeting a row another transaction holds (MySQL's 3572,
 * MariaDB's 1205): only that statement was rolled back.
 */
export function isLockNotGranted(error: unknown): boolean {
  const { errno, code } = (error ?? {}) as { errno?: unknown; code?: unknown };
  return (
    errno === LOCK_NOWAIT || errno === LOCK_WAIT_TIMEOUT || code === 'ER_LOCK_NOWAIT' || code === 'ER_LOCK_WAIT_TIMEOUT'
  );
}
