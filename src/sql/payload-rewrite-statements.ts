import { SqlParams, type SqlDialect } from './sql-dialect.js';
import type { SqlStatement } from './list-queries.js';
import { toJson } from './workflow-rows.js';
import type { WorkflowPayloadChange, WorkflowPayloadRewrite } from '../storage/payload-rewrite.js';

/** How a dialect compares and stores a payload's JSON text (PostgreSQL's `json` needs casts, MySQL's text doesn't). */
export interface PayloadRewriteDialect extends SqlDialect {
  /** A placeholder holding JSON text, as the column takes it. */
  jsonValue(placeholder: string): string;
  /** The column's stored JSON text. */
  jsonText(column: string): string;
  /** `a` equals `b`, where two NULLs are equal. */
  same(a: string, b: string): string;
}

const JSON_COLUMNS = [
  ['input', 'input'],
  ['output', 'output'],
  ['error', 'error'],
  ['customStatus', 'custom_status'],
] as const;

/**
 * Re-encryption's statements for one instance: each payload replaced by one conditional `UPDATE`
 * that compares the stored JSON text with the text of the value as it was read (the stores write
 * JSON with `JSON.stringify` and keep that text exactly, so equal values have equal text). Nothing
 * else of the row changes, so they need neither the lease nor the instance's write queue; the
 * caller adds up the rows they changed.
 */
export function payloadRewriteStatements(
  d: PayloadRewriteDialect,
  tables: { instances: string; journal: string },
  id: string,
  rewrite: WorkflowPayloadRewrite,
): SqlStatement[] {
  const statements: SqlStatement[] = [];
  const update = (build: (p: SqlParams) => string) => {
    const p = new SqlParams(d);
    statements.push({ sql: build(p), params: p.values });
  };
  for (const [field, column] of JSON_COLUMNS) {
    const change = rewrite[field] as WorkflowPayloadChange | undefined;
    if (!change) continue;
    update(
      (p) =>
        `UPDATE ${tables.instances} SET ${column} = ${d.jsonValue(p.add(toJson(change.to)))} ` +
        `WHERE id = ${p.add(id)} AND ${d.same(d.jsonText(column), p.add(toJson(change.from)))}`,
    );
  }
  if (rewrite.cancelReason) {
    const { from, to } = rewrite.cancelReason;
    update(
      (p) =>
        `UPDATE ${tables.instances} SET cancel_reason = ${p.add(to)} WHERE id = ${p.add(id)} AND ${d.same('cancel_reason', p.add(from))}`,
    );
  }
  for (const change of rewrite.entries ?? []) {
    update(
      (p) =>
        `UPDATE ${tables.journal} SET entry = ${d.jsonValue(p.add(toJson({ ...change.to, name: change.name })))} ` +
        `WHERE instance_id = ${p.add(id)} AND name = ${p.add(change.name)} AND ${d.jsonText('entry')} = ${p.add(toJson(change.from))}`,
    );
  }
  return statements;
}

/** `rewriteSignalPayload()`'s statement. */
export function signalRewriteStatement(
  d: PayloadRewriteDialect,
  signals: string,
  id: number,
  change: WorkflowPayloadChange,
): SqlStatement {
  const p = new SqlParams(d);
  const sql = `UPDATE ${signals} SET payload = ${d.jsonValue(p.add(toJson(change.to)))} WHERE id = ${p.add(id)} AND ${d.same(d.jsonText('payload'), p.add(toJson(change.from)))}`;
  return { sql, params: p.values };
}
