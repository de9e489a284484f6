/** Sends of a text marked `repeated` before it is prepared: one-off texts never are. */
const PREPARE_AFTER = 3;
/** Texts counted towards `PREPARE_AFTER` at most; past it the counts start over. */
const MAX_COUNTED = 1024;

/**
 * Which statement texts `fromMysql2()` sends as prepared statements: those the store marks
 * `repeated` (`SqlQueryOptions`), once sent `PREPARE_AFTER` times, up to `max` texts. mysql2
 * prepares a text on each connection where it first runs and keeps it there, so the server holds
 * at most `max` of the store's statements per pool connection (they count towards MariaDB's
 * server-wide `max_prepared_stmt_count`). The store's batch texts differ with the batch's size;
 * the sizes that keep coming back (on a busy worker, its concurrency) are the ones prepared.
 */
export class PreparedTexts {
  private readonly counts = new Map<string, number>();
  /** Texts admitted to be prepared, refused ones too: at most `max`. */
  private readonly prepared = new Set<string>();
  /** Admitted texts the server would not prepare: sent as text from then on. */
  private readonly refused = new Set<string>();

  constructor(private readonly max: number) {}

  /** Whether to send `sql` prepared this time (this send counted). */
  take(sql: string): boolean {
    if (this.refused.has(sql)) return false;
    if (this.prepared.has(sql)) return true;
    if (this.prepared.size >= this.max) return false;
    const count = (this.counts.get(sql) ?? 0) + 1;
    if (count < PREPARE_AFTER) {
      if (this.counts.size >= MAX_COUNTED) this.counts.clear();
      this.counts.set(sql, count);
      return false;
    }
    this.counts.delete(sql);
    this.prepared.add(sql);
    return true;
  }

  /**
   * The server refused to prepare `sql`: never again. It keeps its place among the `max`: refused
   * on one connection (the server at `max_prepared_stmt_count`), it may be prepared on others,
   * which keep it, and another text in its place would make them hold one more than `max`.
   */
  refuse(sql: string): void {
    this.refused.add(sql);
  }
}

/**
 * The server's refusals to prepare a text, which the same text sent as text does not meet (the
 * statement never ran): "this command is not supported in the prepared statement protocol"
 * (ER_UNSUPPORTED_PS), "prepared statement contains too many placeholders" (ER_PS_MANY_PARAM: more
 * than 65,535; as text, mysql2 writes the values into it), and "can't create more than
 * max_prepared_stmt_count statements" (ER_MAX_PREPARED_STMT_COUNT_REACHED: the server-wide limit,
 * which every client of the server shares, reached).
 */
const REFUSALS: ReadonlyArray<readonly [errno: number, code: string]> = [
  [1295, 'ER_UNSUPPORTED_PS'],
  [1390, 'ER_PS_MANY_PARAM'],
  [1461, 'ER_MAX_PREPARED_STMT_COUNT_REACHED'],
];

/** Whether `error` is the server refusing to prepare the text (see `REFUSALS`): it goes as text instead. */
export function unpreparable(error: unknown): boolean {
  const { errno, code } = (error ?? {}) as { errno?: unknown; code?: unknown };
  return REFUSALS.some(([number, name]) => errno === number || code === name);
}
