import { quoteIdentifier } from '../sql/schema-name.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { toJson, toSignal } from '../sql/workflow-rows.js';
import type { WorkflowPayloadChange, WorkflowPayloadRewrite, WorkflowSignalPageQuery } from '../storage/payload-rewrite.js';
import type { WorkflowSignalRecord } from '../storage/workflow-store.js';

const JSON_COLUMNS = [
  ['input', 'input'],
  ['output', 'output'],
  ['error', 'error'],
  ['customStatus', 'custom_status'],
] as const;

/**
 * Re-encryption's operations on PostgreSQL: each payload replaced by one conditional `UPDATE` that
 * compares the stored JSON text with the text of the value as it was read (the store writes JSON
 * with `JSON.stringify` and `json` keeps that text exactly, so equal values have equal text).
 * Nothing else of the row changes, so it needs neither the lease nor the instance's write queue.
 */
export class PostgresPayloadRewrite {
  private readonly s: string;

  constructor(
    private readonly executor: SqlExecutor,
    schema: string,
  ) {
    this.s = quoteIdentifier(schema);
  }

  async rewrite(id: string, rewrite: WorkflowPayloadRewrite): Promise<number> {
    const { s } = this;
    const updates: Array<Promise<number>> = [];
    for (const [field, column] of JSON_COLUMNS) {
      const change = rewrite[field] as WorkflowPayloadChange | undefined;
      if (!change) continue;
      updates.push(
        this.count(`UPDATE ${s}.instances SET ${column} = $3::json WHERE id = $1 AND ${column}::text IS NOT DISTINCT FROM $2`, [id, toJson(change.from), toJson(change.to)]),
      );
    }
    if (rewrite.cancelReason) {
      const { from, to } = rewrite.cancelReason;
      updates.push(this.count(`UPDATE ${s}.instances SET cancel_reason = $3 WHERE id = $1 AND cancel_reason IS NOT DISTINCT FROM $2`, [id, from, to]));
    }
    for (const change of rewrite.entries ?? []) {
      updates.push(
        this.count(`UPDATE ${s}.journal SET entry = $4::json WHERE instance_id = $1 AND name = $2 AND entry::text = $3`, [
          id,
          change.name,
          toJson(change.from),
          toJson({ ...change.to, name: change.name }),
        ]),
      );
    }
    const counts = await Promise.all(updates);
    return counts.reduce((sum, n) => sum + n, 0);
  }

  async page(query: WorkflowSignalPageQuery): Promise<WorkflowSignalRecord[]> {
    const { rows } = await this.executor.query(
      `SELECT id, name, key, payload::text AS payload, created_at FROM ${this.s}.signals WHERE id > $1 ORDER BY id LIMIT $2`,
      [query.afterId, query.limit],
    );
    return rows.map(toSignal);
  }

  async rewriteSignal(id: number, change: WorkflowPayloadChange): Promise<boolean> {
    const sql = `UPDATE ${this.s}.signals SET payload = $3::json WHERE id = $1 AND payload::text IS NOT DISTINCT FROM $2`;
    return (await this.count(sql, [id, toJson(change.from), toJson(change.to)])) > 0;
  }

  private async count(sql: string, params: unknown[]): Promise<number> {
    return (await this.executor.query(sql, params)).rowCount;
  }
}
