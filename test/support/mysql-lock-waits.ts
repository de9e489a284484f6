// Which transactions wait for an InnoDB lock right now, for tests that must act only once a
// statement is known to be waiting (a deadlock to form, a signal to commit under a create).
import type mysql from 'mysql2/promise';

/**
 * The transactions InnoDB lists as waiting for a lock now: each one's block of
 * `SHOW ENGINE INNODB STATUS` (its "thread id N," line, its statement, the lock it waits for and the
 * table of that lock), which InnoDB builds when asked. Not information_schema.INNODB_TRX: InnoDB
 * refreshes the copy those rows come from only once nobody read it for 100 ms
 * (CACHE_MIN_IDLE_TIME_NS and trx_i_s_cache_end_read() in trx0i_s.cc), so a poll faster than that,
 * or any other session reading it meanwhile (the test files running alongside), reads the copy made
 * before the wait began again and again.
 */
export async function lockWaits(pool: mysql.Pool): Promise<string[]> {
  const [[{ Status: status }]] = await pool.query<mysql.RowDataPacket[]>('SHOW ENGINE INNODB STATUS');
  return String(status)
    .split(/^---TRANSACTION /m)
    .filter((transaction) => /^LOCK WAIT /m.test(transaction));
}
