import { POSTGRES_DIALECT } from './postgres-dialect.js';
import {
  payloadRewriteStatements,
  signalRewriteStatement,
  type PayloadRewriteDialect,
} from '../sql/payload-rewrite-statements.js';
import { quoteIdentifier } from '../sql/schema-name.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { toSignal } from '../sql/workflow-rows.js';
import type {
  WorkflowPayloadChange,
  WorkflowPayloadRewrite,
  WorkflowSignalPageQuery,
} from '../storage/payload-rewrite.js';
import type { WorkflowSignalRecord } from '../storage/workflow-store.js';

const DIALECT: PayloadRewriteDialect = {
  ...POSTGRES_DIALECT,
  jsonValue: (placeholder) => `${placeholder}::json`,
  jsonText: (column) => `${column}::text`,
  same: (a, b) => `${a} IS NOT DISTINCT FROM ${b}`,
};

/**
 * Re-encryption's operations on PostgreSQL (see `payloadRewriteStatements()`): `json` keeps the text
 * the store wrote, so a payload is compared as `column::text`.
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
    const statements = payloadRewriteStatements(
      DIALECT,
      { instances: `${this.s}.instances`, journal: `${this.s}.journal` },
      id,
      rewrite,
    );
    const counts = await Promise.all(statements.map(({ sql, params }) => this.executor.query(sql, params)));
    return counts.reduce((sum, { rowCount }) => sum + rowCount, 0);
  }

  async page(query: WorkflowSignalPageQuery): Promise<WorkflowSignalRecord[]> {
    const { rows } = await this.executor.query(
      `SELECT id, name, key, payload::text AS payload, created_at FROM ${this.s}.signals WHERE id > $1 ORDER BY id LIMIT $2`,
      [query.afterId, query.limit],
    );
    return rows.map(toSignal);
  }

  async rewriteSignal(id: number, change: WorkflowPayloadChange): Promise<boolean> {
    const { sql, params } = signalRewriteStatement(DIALECT, `${this.s}.signals`, id, change);
    return (await this.executor.query(sql, params)).rowCount > 0;
  }
}
