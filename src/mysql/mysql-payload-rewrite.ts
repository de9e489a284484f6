import { MYSQL_DIALECT } from './mysql-dialect.js';
import { retryOnLockContention } from './mysql-retry.js';
import type { MySqlTables } from './mysql-tables.js';
import {
  payloadRewriteStatements,
  signalRewriteStatement,
  type PayloadRewriteDialect,
} from '../sql/payload-rewrite-statements.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { toSignal } from '../sql/workflow-rows.js';
import type {
  WorkflowPayloadChange,
  WorkflowPayloadRewrite,
  WorkflowSignalPageQuery,
} from '../storage/payload-rewrite.js';
import type { WorkflowSignalRecord } from '../storage/workflow-store.js';

const DIALECT: PayloadRewriteDialect = {
  ...MYSQL_DIALECT,
  jsonValue: (placeholder) => placeholder,
  jsonText: (column) => column,
  same: (a, b) => `${a} <=> ${b}`,
};

/**
 * Re-encryption's operations on MySQL (see `payloadRewriteStatements()`): payloads are the JSON
 * text the store wrote, compared byte for byte (utf8mb4_bin). Each statement is retried on lock
 * contention: it is conditional, so running it again changes nothing more.
 */
export class MySqlPayloadRewrite {
  constructor(
    private readonly executor: SqlExecutor,
    private readonly tables: MySqlTables,
  ) {}

  async rewrite(id: string, rewrite: WorkflowPayloadRewrite): Promise<number> {
    const statements = payloadRewriteStatements(DIALECT, this.tables, id, rewrite);
    const counts = await Promise.all(
      statements.map(({ sql, params }) => retryOnLockContention(() => this.executor.query(sql, params))),
    );
    return counts.reduce((sum, { rowCount }) => sum + rowCount, 0);
  }

  async page(query: WorkflowSignalPageQuery): Promise<WorkflowSignalRecord[]> {
    const { rows } = await this.executor.query(
      `SELECT id, name, \`key\`, payload, created_at FROM ${this.tables.signals} WHERE id > ? ORDER BY id LIMIT ?`,
      [query.afterId, query.limit],
    );
    return rows.map(toSignal);
  }

  async rewriteSignal(id: number, change: WorkflowPayloadChange): Promise<boolean> {
    const { sql, params } = signalRewriteStatement(DIALECT, this.tables.signals, id, change);
    return (await retryOnLockContention(() => this.executor.query(sql, params))).rowCount > 0;
  }
}
