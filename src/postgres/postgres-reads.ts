import { POSTGRES_DIALECT } from './postgres-dialect.js';
import { instanceColumns } from './postgres-sql-fragments.js';
import { postgresUnpaused } from './postgres-pauses.js';
import { listInstances } from '../sql/list-queries.js';
import { quoteIdentifier } from '../sql/schema-name.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { UNFINISHED } from '../sql/status-lists.js';
import { fromJson, pauseColumns, toInstance, toUndeclaredDue, toWaits } from '../sql/workflow-rows.js';
import type { WorkflowInstance, WorkflowJournalEntry } from '../storage/workflow-instance.js';
import type {
  WorkflowInstanceDetails,
  WorkflowListQuery,
  WorkflowUndeclaredDue,
  WorkflowUndeclaredDueQuery,
} from '../storage/workflow-store.js';

/** The reads' statements for a quoted schema. */
function readStatements(s: string) {
  return {
    /** $1 id. */
    getInstance: `SELECT ${instanceColumns()}, ${pauseColumns()}, wait_topics FROM ${s}.instances WHERE id = $1`,

    /** $1 id: the instance, its waits and its journal (a JSON array in first-write order), in one snapshot. */
    getInstanceWithJournal: `SELECT ${instanceColumns('i')}, ${pauseColumns('i')}, i.wait_topics,
  (SELECT json_agg(j.entry ORDER BY j.seq)::text FROM ${s}.journal j WHERE j.instance_id = i.id) AS journal
FROM ${s}.instances i WHERE i.id = $1`,

    /** The start of `list()`; the store appends its filters, order and page. */
    listPrefix: `SELECT ${instanceColumns()}, ${pauseColumns()} FROM ${s}.instances`,

    /**
     * $1 now, $2 cap: due instances without a lease (instances_due) and with a lapsed one
     * (instances_leased_until), each part stopping at the cap so a large backlog costs no more.
     */
    countDue: `SELECT least($2::int, (SELECT count(*) FROM (SELECT 1 FROM ${s}.instances i
    WHERE status IN ${UNFINISHED} AND wake_at IS NOT NULL AND lease_token IS NULL AND wake_at <= $1 AND ${postgresUnpaused(s, 'i')} LIMIT $2) a)
  + (SELECT count(*) FROM (SELECT 1 FROM ${s}.instances i
    WHERE lease_token IS NOT NULL AND lease_until < $1 AND status IN ${UNFINISHED} AND wake_at <= $1 AND ${postgresUnpaused(s, 'i')} LIMIT $2) b))::int AS due`,

    /**
     * $1 dueBefore, $2 declared names, $3 their versions, $4 cap: countUndeclaredDue(). Due
     * instances without a lease (instances_due) and with one lapsed before $1 (instances_leased_until),
     * of pairs not declared, each part stopping at the cap; grouped per pair.
     */
    countUndeclaredDue: `SELECT workflow, version, count(*)::int AS count FROM (SELECT * FROM (
  (SELECT workflow, version FROM ${s}.instances i
    WHERE status IN ${UNFINISHED} AND wake_at IS NOT NULL AND lease_token IS NULL AND wake_at <= $1 AND ${postgresUnpaused(s, 'i')}
      AND NOT EXISTS (SELECT 1 FROM unnest($2::text[], $3::integer[]) AS p(n, v) WHERE p.n = i.workflow AND p.v = i.version) LIMIT $4)
  UNION ALL
  (SELECT workflow, version FROM ${s}.instances i
    WHERE lease_token IS NOT NULL AND lease_until < $1 AND status IN ${UNFINISHED} AND wake_at <= $1 AND ${postgresUnpaused(s, 'i')}
      AND NOT EXISTS (SELECT 1 FROM unnest($2::text[], $3::integer[]) AS p(n, v) WHERE p.n = i.workflow AND p.v = i.version) LIMIT $4)
) due LIMIT $4) capped GROUP BY workflow, version ORDER BY workflow, version`,
  };
}

/** The reads of instances on PostgreSQL (`get()`, `list()`, the due counts): one statement each. */
export class PostgresReads {
  private readonly sql: ReturnType<typeof readStatements>;

  constructor(
    private readonly executor: SqlExecutor,
    schema: string,
  ) {
    this.sql = readStatements(quoteIdentifier(schema));
  }

  async get(id: string, options?: { journal?: boolean }): Promise<WorkflowInstanceDetails | null> {
    const { rows } = await this.executor.query(
      options?.journal ? this.sql.getInstanceWithJournal : this.sql.getInstance,
      [id],
    );
    const row = rows[0];
    if (!row) return null;
    const details: WorkflowInstanceDetails = { ...toInstance(row), waits: toWaits(row.wait_topics) };
    if (options?.journal) details.journal = (fromJson(row.journal) as WorkflowJournalEntry[] | null) ?? [];
    return details;
  }

  /** The instance `id` as `executor` sees it (the application's transaction, say), or `null`. */
  async instance(executor: SqlExecutor, id: string): Promise<WorkflowInstance | null> {
    const { rows } = await executor.query(this.sql.getInstance, [id]);
    return rows[0] ? toInstance(rows[0]) : null;
  }

  list(query: WorkflowListQuery): Promise<WorkflowInstance[]> {
    return listInstances(this.executor, POSTGRES_DIALECT, this.sql.listPrefix, query);
  }

  async countDue(now: number, cap: number): Promise<number> {
    const { rows } = await this.executor.query(this.sql.countDue, [now, cap]);
    return Number(rows[0]?.due ?? 0);
  }

  async countUndeclaredDue(query: WorkflowUndeclaredDueQuery): Promise<WorkflowUndeclaredDue[]> {
    const names = query.workflows.map(({ name }) => name);
    const versions = query.workflows.map(({ version }) => version);
    const { rows } = await this.executor.query(this.sql.countUndeclaredDue, [
      query.dueBefore,
      names,
      versions,
      query.cap,
    ]);
    return rows.map(toUndeclaredDue);
  }
}
