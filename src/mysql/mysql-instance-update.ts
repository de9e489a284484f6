import { placeholders } from './mysql-tables.js';

/** A new value of an instance column: the column, the SQL of the value, that SQL's parameters. */
export type Change = [column: string, sql: string, params: unknown[]];

/** One instance's changes in `updateInstances()`, fenced by `token` unless it is `null`. */
export interface InstanceUpdate {
  id: string;
  token: string | null;
  changes: Change[];
}

/**
 * One `UPDATE` of each instance's changes: per column, a `CASE id` over the instances that set it
 * (the others keep theirs), or the value once when every row sets the same. With tokens, only rows
 * still leased under theirs match. `null` when no instance changes a column.
 */
export function instanceUpdateStatement(
  instances: string,
  updates: readonly InstanceUpdate[],
): { sql: string; params: unknown[] } | null {
  const byColumn = new Map<string, Array<{ id: string; sql: string; params: unknown[] }>>();
  for (const { id, changes } of updates) {
    for (const [column, sql, params] of changes) {
      const list = byColumn.get(column) ?? [];
      list.push({ id, sql, params });
      byColumn.set(column, list);
    }
  }
  if (byColumn.size === 0) return null;
  const params: unknown[] = [];
  const sets = [...byColumn].map(([column, values]) => {
    // The same value for every row (a status, a lease cleared, one `now`): no CASE to parse.
    if (values.length === updates.length && values.every((value) => sameChange(value, values[0]!))) {
      params.push(...values[0]!.params);
      return `${column} = ${values[0]!.sql}`;
    }
    for (const value of values) params.push(value.id, ...value.params);
    return `${column} = CASE id ${values.map((value) => `WHEN ? THEN ${value.sql}`).join(' ')} ELSE ${column} END`;
  });
  params.push(...updates.map((update) => update.id));
  let fence = '';
  const fenced = updates.filter((update) => update.token !== null);
  if (fenced.length === updates.length && fenced.every((update) => update.token === fenced[0]!.token)) {
    // One claim's instances share its token.
    fence = ' AND lease_token = ?';
    params.push(fenced[0]!.token);
  } else if (fenced.length > 0) {
    fence = ` AND lease_token = CASE id ${fenced.map(() => 'WHEN ? THEN ?').join(' ')} END`;
    for (const update of fenced) params.push(update.id, update.token);
  }
  return {
    // By primary key, in key order, whatever the fence: a shared token would otherwise draw the
    // optimizer to `instances_wake`, locking in another order.
    sql: `UPDATE ${instances} FORCE INDEX (PRIMARY) SET ${sets.join(', ')} WHERE id IN (${placeholders(updates.length)})${fence}`,
    params,
  };
}

/** Whether two rows' changes of a column are the same SQL with the same parameters. */
function sameChange(a: { sql: string; params: unknown[] }, b: { sql: string; params: unknown[] }): boolean {
  return (
    a.sql === b.sql &&
    a.params.length === b.params.length &&
    a.params.every((param, index) => param === b.params[index])
  );
}
