import { SqlProcesses } from '../sql/process-records.js';
import type { MySqlTables } from './mysql-tables.js';

/** The process records (`WorkflowProcessStore`) on MySQL / MariaDB, in `<schema>_processes` (migration 0010). */
export function mysqlProcesses(tables: MySqlTables): SqlProcesses {
  const { processes } = tables;
  return new SqlProcesses({
    record: `INSERT INTO ${processes} (id, owner, host, pid, declared, started_at, seen_at) VALUES (?, ?, ?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE owner = VALUES(owner), host = VALUES(host), pid = VALUES(pid), declared = VALUES(declared),
  started_at = VALUES(started_at), seen_at = VALUES(seen_at)`,
    removeStale: `DELETE FROM ${processes} WHERE seen_at < ?`,
    remove: `DELETE FROM ${processes} WHERE id = ?`,
    live: `SELECT id, owner, host, pid, declared, started_at, seen_at FROM ${processes} WHERE seen_at >= ? ORDER BY started_at, id`,
  });
}
