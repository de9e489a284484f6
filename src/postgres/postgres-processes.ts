import { SqlProcesses } from '../sql/process-records.js';
import { quoteIdentifier } from '../sql/schema-name.js';

/** The process records (`WorkflowProcessStore`) on PostgreSQL, in `<schema>.processes` (migration 0014). */
export function postgresProcesses(schema: string): SqlProcesses {
  const s = quoteIdentifier(schema);
  return new SqlProcesses({
    record: `INSERT INTO ${s}.processes (id, owner, host, pid, declared, started_at, seen_at)
VALUES ($1, $2, $3, $4, $5::json, $6, $7)
ON CONFLICT (id) DO UPDATE SET owner = EXCLUDED.owner, host = EXCLUDED.host, pid = EXCLUDED.pid,
  declared = EXCLUDED.declared, started_at = EXCLUDED.started_at, seen_at = EXCLUDED.seen_at`,
    removeStale: `DELETE FROM ${s}.processes WHERE seen_at < $1`,
    remove: `DELETE FROM ${s}.processes WHERE id = $1`,
    live: `SELECT id, owner, host, pid, declared, started_at, seen_at FROM ${s}.processes WHERE seen_at >= $1 ORDER BY started_at, id`,
  });
}
