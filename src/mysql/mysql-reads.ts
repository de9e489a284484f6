import { MYSQL_DIALECT } from './mysql-dialect.js';
import { COMMON_GROUND, repeatedOn, type MySqlServerFeatures } from './mysql-server.js';
import { INSTANCE_COLUMNS, type MySqlTables } from './mysql-tables.js';
import { listInstances } from '../sql/list-queries.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { UNFINISHED } from '../sql/status-lists.js';
import { mysqlUnpaused } from './mysql-pauses.js';
import { pauseColumns, toInstance, toUndeclaredDue, toWaits } from '../sql/workflow-rows.js';
import type { WorkflowInstance, WorkflowJournalEntry } from '../storage/workflow-instance.js';
import type {
  WorkflowInstanceDetails,
  WorkflowListQuery,
  WorkflowUndeclaredDue,
  WorkflowUndeclaredDueQuery,
} from '../storage/workflow-store.js';

/** The reads' statements for the store's tables. */
function readStatements(tables: MySqlTables) {
  const { instances, journal } = tables;
  /** A part of a due count: `due` without a lease (by instances_wake) or with a lapsed one (by instances_lapsed). */
  const countPart = (due: string) =>
    `(SELECT COUNT(*) FROM (SELECT 1 FROM ${instances} WHERE ${due} AND status IN ${UNFINISHED} AND wake_at <= ? AND ${mysqlUnpaused(tables)} LIMIT ?) p)`;
  const undeclaredPart = (due: string, pairs: string) =>
    `(SELECT workflow, version FROM ${instances} WHERE ${due} AND status IN ${UNFINISHED} AND wake_at <= ? AND ${mysqlUnpaused(tables)} ${pairs} LIMIT ?)`;
  return {
    /** id. */
    getInstance: `SELECT ${INSTANCE_COLUMNS}, ${pauseColumns()}, wait_topics FROM ${instances} WHERE id = ?`,
    /** id: the journal's entries in first-write order. */
    getJournal: `SELECT entry FROM ${journal} WHERE instance_id = ? ORDER BY seq`,
    /** The start of `list()`; the store appends its filters, order and page. */
    listPrefix: `SELECT ${INSTANCE_COLUMNS}, ${pauseColumns()} FROM ${instances}`,
    /** cap, now, cap, now, now, cap. */
    countDue: `SELECT LEAST(?, ${countPart('lease_token IS NULL AND wake_at IS NOT NULL')} + ${countPart('lease_until < ? AND lease_token IS NOT NULL')}) AS due`,
    /** For each part: dueBefore (twice for the lapsed part), the declared pairs, cap; then cap. */
    countUndeclaredDue: (declared: number) => {
      const pairs =
        declared === 0
          ? ''
          : `AND (workflow, version) NOT IN (${Array.from({ length: declared }, () => '(?, ?)').join(', ')})`;
      return `SELECT workflow, version, COUNT(*) AS count FROM (SELECT workflow, version FROM (
  ${undeclaredPart('lease_token IS NULL AND wake_at IS NOT NULL', pairs)}
  UNION ALL
  ${undeclaredPart('lease_until < ? AND lease_token IS NOT NULL', pairs)}
) due LIMIT ?) capped GROUP BY workflow, version ORDER BY workflow, version`;
    },
  };
}

/**
 * The reads of instances on MySQL (`get()`, `list()`, the due counts). The counts read due
 * instances without a lease (by instances_wake, `(lease_token, wake_at)`) and with one that lapsed
 * (by instances_lapsed), each part stopping at the cap: the health check's and the backlog gauge's
 * count costs the same however large the backlog, and is never a scan of every instance.
 */
export class MySqlReads {
  /** What the server offers beyond the common ground: set by the store's `init()`. */
  server: MySqlServerFeatures = COMMON_GROUND;
  private readonly sql: ReturnType<typeof readStatements>;

  constructor(
    private readonly executor: SqlExecutor,
    tables: MySqlTables,
  ) {
    this.sql = readStatements(tables);
  }

  async get(id: string, options?: { journal?: boolean }): Promise<WorkflowInstanceDetails | null> {
    const repeated = repeatedOn(this.server);
    const { rows } = await this.executor.query(this.sql.getInstance, [id], repeated);
    const row = rows[0];
    if (!row) return null;
    const details: WorkflowInstanceDetails = { ...toInstance(row), waits: toWaits(row.wait_topics) };
    if (options?.journal) {
      const journal = await this.executor.query(this.sql.getJournal, [id], repeated);
      details.journal = journal.rows.map((entry) => JSON.parse(String(entry.entry)) as WorkflowJournalEntry);
    }
    return details;
  }

  list(query: WorkflowListQuery): Promise<WorkflowInstance[]> {
    return listInstances(this.executor, MYSQL_DIALECT, this.sql.listPrefix, query);
  }

  async countDue(now: number, cap: number): Promise<number> {
    const { rows } = await this.executor.query(this.sql.countDue, [cap, now, cap, now, now, cap]);
    return Number(rows[0]?.due ?? 0);
  }

  async countUndeclaredDue(query: WorkflowUndeclaredDueQuery): Promise<WorkflowUndeclaredDue[]> {
    const declared = query.workflows.flatMap(({ name, version }) => [name, version]);
    const { rows } = await this.executor.query(this.sql.countUndeclaredDue(query.workflows.length), [
      query.dueBefore,
      ...declared,
      query.cap,
      query.dueBefore,
      query.dueBefore,
      ...declared,
      query.cap,
      query.cap,
    ]);
    return rows.map(toUndeclaredDue);
  }
}
