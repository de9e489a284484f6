import { toNullableString, toNumber } from './workflow-rows.js';
import type { SqlExecutor } from './sql-executor.js';
import { SqlParams, type SqlDialect } from './sql-dialect.js';
import {
  UNTAKEN_SIGNALS_SCANNED,
  type WorkflowUntakenSignal,
  type WorkflowUntakenSignalQuery,
} from '../storage/workflow-store-signals.js';

/** How a dialect reads a journal entry's `signalId`. */
export interface EntrySignalId {
  /** The entry column as text (for a LIKE that skips entries without one, most of them). */
  text(column: string): string;
  /** The entry's `signalId` as a number (NULL when it has none). */
  value(column: string): string;
}

/**
 * `untakenSignals()` of a SQL store: among the newest `UNTAKEN_SIGNALS_SCANNED` signals, those no
 * journal entry names as the signal it took, newest first. The journal has no index on an entry's
 * `signalId`: the ids taken are read in one pass over the journal (a derived table, never a
 * lookup per signal), which suits an operator's page, not a loop.
 */
export async function untakenSignals(
  executor: SqlExecutor,
  dialect: SqlDialect,
  schema: string,
  signalId: EntrySignalId,
  query: WorkflowUntakenSignalQuery,
): Promise<WorkflowUntakenSignal[]> {
  const p = new SqlParams(dialect);
  const key = dialect.quote('key');
  const sql = `SELECT s.id, s.name, s.${key}, s.created_at
FROM (SELECT id, name, ${key}, created_at FROM ${dialect.table(schema, 'signals')} ORDER BY id DESC LIMIT ${UNTAKEN_SIGNALS_SCANNED}) s
LEFT JOIN (
  SELECT DISTINCT ${signalId.value('j.entry')} AS id FROM ${dialect.table(schema, 'journal')} j
  WHERE ${signalId.text('j.entry')} LIKE '%"signalId":%'
) taken ON taken.id = s.id
WHERE taken.id IS NULL AND s.name NOT LIKE '$%'
ORDER BY s.id DESC LIMIT ${p.add(query.limit)}`;
  const { rows } = await executor.query(sql, p.values);
  return rows.map((row) => ({
    id: toNumber(row.id),
    name: String(row.name),
    key: toNullableString(row.key),
    createdAt: toNumber(row.created_at),
  }));
}
