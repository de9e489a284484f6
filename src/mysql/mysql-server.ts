import type { SqlExecutor, SqlQueryOptions } from '../sql/sql-executor.js';

/**
 * How the store writes its batches on this server, found once at startup (`init()`).
 *
 * MySQL 8.0 and MariaDB 10.6+ share a common ground, which every path of the store can run on:
 * a batch that changes instances is a transaction of several statements, and one that writes
 * journal entries alone reads back which writes landed when some did not. MariaDB has two things
 * MySQL lacks that make each of those one round trip, with the same locks in the same order:
 * `INSERT ... RETURNING` (10.5+), which answers which instances' rows went in, and anonymous
 * compound statements (`BEGIN NOT ATOMIC ... END`), which carry a whole transaction, its fence
 * check and its commit. They are used only when the server says it is MariaDB 10.5 or later and a
 * compound statement goes through the executor; otherwise the store keeps to the common ground.
 */
export interface MySqlServerFeatures {
  /** Batches in one round trip each: `INSERT ... RETURNING` and compound statements. */
  readonly oneRoundTripBatches: boolean;
  /**
   * The statements of the hot path (claims, write batches, the wake-up poll, reads by id) go
   * with the `repeated` hint (`SqlQueryOptions`), so `fromMysql2()` prepares them: MariaDB only,
   * the server the store is tested on with every number bound as a double, as mysql2 binds them
   * (MySQL 8.0.22+ refuses a double for `LIMIT ?`).
   */
  readonly preparedStatements: boolean;
  /**
   * The session says in a statement whether it is in a transaction (MariaDB's `@@in_transaction`):
   * the write of a `ctx.transaction()` step's result on the `transactions` option's ORM reads it
   * in the statement that locks the instance row. MySQL 8.0 has no such variable: there a
   * savepoint tells, in two more statements (see `MySqlWrites.writeIn()`).
   */
  readonly inTransactionVariable: boolean;
}

/** The common ground of MySQL 8.0 and MariaDB 10.6+: what a store that has not started yet uses. */
export const COMMON_GROUND: MySqlServerFeatures = {
  oneRoundTripBatches: false,
  preparedStatements: false,
  inTransactionVariable: false,
};

const REPEATED: SqlQueryOptions = { repeated: true };

/** The `query()` options of a statement of the hot path on `server`: the `repeated` hint where it prepares. */
export function repeatedOn(server: MySqlServerFeatures): SqlQueryOptions | undefined {
  return server.preparedStatements ? REPEATED : undefined;
}

/** MariaDB's first version with `INSERT ... RETURNING`. */
const RETURNING_SINCE = [10, 5] as const;

/** What `executor`'s server offers (see `MySqlServerFeatures`). Never throws: in doubt, the common ground. */
export async function detectServerFeatures(executor: SqlExecutor): Promise<MySqlServerFeatures> {
  try {
    const { rows } = await executor.query('SELECT VERSION() AS version');
    // MariaDB says so in its version ("10.11.19-MariaDB-0+deb12u1"); MySQL never does.
    const match = /(\d+)\.(\d+)\.\d+-MariaDB/i.exec(String(rows[0]?.version ?? ''));
    if (!match) return COMMON_GROUND;
    const [major, minor] = [Number(match[1]), Number(match[2])];
    if (major < RETURNING_SINCE[0] || (major === RETURNING_SINCE[0] && minor < RETURNING_SINCE[1]))
      return COMMON_GROUND;
    await executor.query('BEGIN NOT ATOMIC DO 0; END');
    return { oneRoundTripBatches: true, preparedStatements: true, inTransactionVariable: true };
  } catch {
    return COMMON_GROUND;
  }
}

/**
 * The text of a compound statement (MariaDB) that runs `body` in a READ COMMITTED transaction of
 * its own and commits it, then runs `afterCommit`; `declarations` (variables, cursors, handlers)
 * come first. Its exit handler rolls the transaction back on any error and raises the error again,
 * so the connection goes back to the pool with no transaction open (a lock-wait timeout rolls back
 * only the statement that waited) and the caller may simply run it again.
 */
export function compoundTransaction(
  body: string,
  { declarations = '', afterCommit = '' }: { declarations?: string; afterCommit?: string } = {},
): string {
  return `BEGIN NOT ATOMIC
${declarations}DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
START TRANSACTION;
${body}COMMIT;
${afterCommit}END`;
}
