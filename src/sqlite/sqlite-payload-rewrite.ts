import {
  payloadRewriteStatements,
  signalRewriteStatement,
  type PayloadRewriteDialect,
} from '../sql/payload-rewrite-statements.js';
import { quoteIdentifier } from '../sql/schema-name.js';
import { toSignal } from '../sql/workflow-rows.js';
import type {
  WorkflowPayloadChange,
  WorkflowPayloadRewrite,
  WorkflowSignalPageQuery,
} from '../storage/payload-rewrite.js';
import type { WorkflowSignalRecord } from '../storage/workflow-store.js';
import type { SqliteStatements } from './sqlite-statements.js';
import type { SqliteTables } from './sqlite-tables.js';

/** SQLite keeps payloads as JSON text in TEXT columns: compared as they are, `IS` matching two NULLs. */
const DIALECT: PayloadRewriteDialect = {
  placeholder: () => '?',
  quote: quoteIdentifier,
  table: (schema, table) => quoteIdentifier(`${schema}_${table}`),
  jsonValue: (placeholder) => placeholder,
  jsonText: (column) => column,
  same: (a, b) => `${a} IS ${b}`,
};

/** Re-encryption: each payload of one instance replaced while it still holds its `from`; resolves to how many were. */
export function rewritePayloads(
  sql: SqliteStatements,
  t: SqliteTables,
  id: string,
  rewrite: WorkflowPayloadRewrite,
): number {
  let replaced = 0;
  for (const statement of payloadRewriteStatements(DIALECT, t, id, rewrite))
    replaced += sql.run(statement.sql, statement.params);
  return replaced;
}

/** Re-encryption: one page of every stored signal, in id order. */
export function signalPage(
  sql: SqliteStatements,
  t: SqliteTables,
  query: WorkflowSignalPageQuery,
): WorkflowSignalRecord[] {
  return sql
    .all(`SELECT id, name, key, payload, created_at FROM ${t.signals} WHERE id > ? ORDER BY id LIMIT ?`, [
      query.afterId,
      query.limit,
    ])
    .map(toSignal);
}

/** Re-encryption: a signal's payload replaced while it is still `change.from`. */
export function rewriteSignalPayload(
  sql: SqliteStatements,
  t: SqliteTables,
  id: number,
  change: WorkflowPayloadChange,
): boolean {
  const statement = signalRewriteStatement(DIALECT, t.signals, id, change);
  return sql.run(statement.sql, statement.params) > 0;
}
