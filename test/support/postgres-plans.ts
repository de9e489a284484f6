// The generic plan PostgreSQL makes for a prepared statement (plan_cache_mode = force_generic_plan),
// for the specs that check the store's statements reach their tables by key whatever plan is kept.
import type pg from 'pg';
import type { SqlExecutor } from '../../src/sql/sql-executor.js';

export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  /** The name the statement gives the relation (its alias, or the table's name). */
  Alias?: string;
  /** The index an index (only) scan reads. */
  'Index Name'?: string;
  Plans?: PlanNode[];
}

/** Every node of a plan, the root first. */
export const planNodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(planNodes)];

/**
 * The generic plan of `sql` on `client`, explained for `params` (each given to EXECUTE as a
 * literal, quoted by the server as the driver would send it). The client's session is left as it was.
 */
export function genericPlan(client: pg.PoolClient, sql: string, params: readonly unknown[]): Promise<PlanNode> {
  return preparedPlan(client, sql, params, 'generic');
}

/**
 * The plan of `sql` prepared on `client`, generic (the one a prepared statement may keep) or
 * custom (made for `params`, as for its first runs), as `genericPlan()` explains it.
 */
export async function preparedPlan(
  client: pg.PoolClient,
  sql: string,
  params: readonly unknown[],
  plan: 'generic' | 'custom',
): Promise<PlanNode> {
  try {
    await client.query(`SET plan_cache_mode = force_${plan}_plan`);
    await client.query(`PREPARE generic_plan AS ${sql}`);
    const args: string[] = [];
    for (const param of params)
      args.push((await client.query('SELECT quote_nullable($1::text) AS q', [param])).rows[0].q as string);
    const explained = await client.query(`EXPLAIN (FORMAT JSON) EXECUTE generic_plan(${args.join(', ')})`);
    return (explained.rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0]!.Plan;
  } finally {
    await client.query('DEALLOCATE ALL');
    await client.query('RESET plan_cache_mode');
  }
}

/** `executor`, telling `heard` of every statement with parameters before it sends it. */
export function recordingExecutor(
  executor: SqlExecutor,
  heard: (sql: string, params: readonly unknown[]) => void,
): SqlExecutor {
  return {
    ...executor,
    async query(sql, params, options) {
      if (params && params.length > 0) heard(sql, params);
      return executor.query(sql, params, options);
    },
  };
}
