import { journalEntryJson } from '../storage/journal-entry-json.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { placeholders } from './mysql-tables.js';
import type { WorkflowJournalEntry } from '../storage/workflow-instance.js';

/** An entry as the journal stores it: its instance, its name and its JSON text. */
export type JournalRow = [instanceId: string, name: string, entry: string];

/** `entries` as journal rows, serialized now: an entry JSON can't carry throws here, before any statement. */
export function journalRows(id: string, entries: readonly WorkflowJournalEntry[]): JournalRow[] {
  return entries.map((entry) => [id, entry.name, journalEntryJson(entry)]);
}

/**
 * Upserts journal entries by name, in one statement: a new name gets the next `seq`
 * (AUTO_INCREMENT, allocated in row order), so the journal keeps first-write order; an existing
 * name keeps its row and its `seq` and gets the new entry whole. Each name at most once per
 * instance (`distinctEntries()`).
 */
export async function upsertJournal(tx: SqlExecutor, table: string, rows: readonly JournalRow[]): Promise<void> {
  const statement = upsertJournalStatement(table, rows);
  if (statement) await tx.query(statement.sql, statement.params);
}

/** The statement of `upsertJournal()`, or `null` when there are no rows. */
export function upsertJournalStatement(
  table: string,
  rows: readonly JournalRow[],
): { sql: string; params: unknown[] } | null {
  if (rows.length === 0) return null;
  const values = Array.from({ length: rows.length }, () => '(?, ?, ?)').join(', ');
  return {
    sql: `INSERT INTO ${table} (instance_id, name, entry) VALUES ${values} ON DUPLICATE KEY UPDATE entry = VALUES(entry)`,
    params: rows.flat(),
  };
}

/** Journal rows to write under a lease: the instance's id, its lease token, and its rows in order. */
export interface FencedJournal {
  id: string;
  token: string;
  rows: readonly JournalRow[];
}

/**
 * One statement that upserts each instance's rows only while `token` is its lease token, under the
 * instance row's lock (`FOR UPDATE`): `INSERT ... SELECT` from the instances it finds with their
 * tokens, so it commits on its own. A lone row reads its instance by primary key; several go
 * through a derived table in `(id, order)` order, joined to the instances in that order (primary
 * key order, as every batch locks them), and sorted on a column of the instances before anything
 * is inserted: every lock is taken before the first row goes in, so no insert holds the journal's
 * `AUTO_INCREMENT` lock while it waits for a row. The rows of each instance keep their order (and
 * so their `seq` order). `rowCount` is 0 only when no instance matched; the `Records:` count of
 * the answer's info is the rows the `SELECT` gave.
 */
export function fencedJournalInsert(
  journal: string,
  instances: string,
  writes: readonly FencedJournal[],
): { sql: string; params: unknown[] } {
  const upsert = 'ON DUPLICATE KEY UPDATE entry = VALUES(entry)';
  const only = writes.length === 1 && writes[0]!.rows.length === 1 ? writes[0]! : null;
  if (only) {
    const [, name, entry] = only.rows[0]!;
    return {
      sql: `INSERT INTO ${journal} (instance_id, name, entry) SELECT id, ?, ? FROM ${instances} WHERE id = ? AND lease_token = ? FOR UPDATE ${upsert}`,
      params: [name, entry, only.id, only.token],
    };
  }
  const sorted = [...writes].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  if (sorted.every((write, index) => write.rows.length === 1 && (index === 0 || write.id !== sorted[index - 1]!.id))) {
    return oneRowEach(journal, instances, sorted, upsert);
  }
  const params: unknown[] = [];
  const selects: string[] = [];
  for (const write of sorted) {
    for (const [, name, entry] of write.rows) {
      params.push(selects.length, write.id, write.token, name, entry);
      // The entry CAST in every SELECT: prepared (MariaDB 10.11, see `fromMysql2()`), a UNION of
      // bare parameters gives its column a string type of at most 65,535 bytes and cuts a longer
      // entry to its length modulo 65,536 bytes, without an error or a warning.
      selects.push(
        selects.length === 0
          ? 'SELECT ? AS w_ord, ? AS w_id, ? AS w_token, ? AS w_name, CAST(? AS CHAR) AS w_entry'
          : 'SELECT ?, ?, ?, ?, CAST(? AS CHAR)',
      );
    }
  }
  return {
    sql: `INSERT INTO ${journal} (instance_id, name, entry)
SELECT i.id, w.w_name, w.w_entry FROM (${selects.join(' UNION ALL ')}) w
STRAIGHT_JOIN ${instances} i ON i.id = w.w_id AND i.lease_token = w.w_token
ORDER BY w.w_ord, i.runs FOR UPDATE ${upsert}`,
    params,
  };
}

/**
 * `fencedJournalInsert()` of writes of one row each, of distinct instances (`sorted` by id; a step's
 * result, say): the instances read by primary key in key order (forced: with a token shared by all,
 * the optimizer would rather read `instances_wake`, locking in another order), each row's name and
 * entry picked by `CASE id` (a name or token shared by all, once), sorted on a column of the
 * instances before anything is inserted, as with the derived table, without one select per row to
 * parse.
 */
function oneRowEach(
  journal: string,
  instances: string,
  sorted: readonly FencedJournal[],
  upsert: string,
): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const when = sorted.map(() => 'WHEN ? THEN ?').join(' ');
  /** The SQL of one value per instance: `?` when all are the same. */
  const pick = (value: (write: FencedJournal) => unknown): string => {
    const first = value(sorted[0]!);
    if (sorted.every((write) => value(write) === first)) {
      params.push(first);
      return '?';
    }
    for (const write of sorted) params.push(write.id, value(write));
    return `CASE id ${when} END`;
  };
  const name = pick((write) => write.rows[0]![1]);
  const entry = pick((write) => write.rows[0]![2]);
  for (const write of sorted) params.push(write.id);
  const token = pick((write) => write.token);
  return {
    sql: `INSERT INTO ${journal} (instance_id, name, entry)
SELECT id, ${name}, ${entry} FROM ${instances} FORCE INDEX (PRIMARY) WHERE id IN (${placeholders(sorted.length)}) AND lease_token = ${token}
ORDER BY runs, id FOR UPDATE ${upsert}`,
    params,
  };
}

/** The rows an `INSERT ... SELECT` took from its `SELECT`, from the answer's info, or `null` when it doesn't say. */
export function insertedRecords(info: string | undefined): number | null {
  const match = /^\D*(\d+)/.exec(info ?? '');
  return match ? Number(match[1]) : null;
}
