import { distinctEntries } from '../sql/distinct-entries.js';
import type { ForkStatements } from '../sql/instance-fork.js';
import { quoteIdentifier } from '../sql/schema-name.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { journalJson } from '../storage/journal-entry-json.js';
import type { WorkflowFork } from '../storage/workflow-store.js';

/**
 * `fork()`'s statement on PostgreSQL after the create: the origin, and the journal in one insert
 * whose `seq` follows the entries' order, with `journal_seq` left at the last one (as writes keep it).
 */
export class PostgresForks implements ForkStatements {
  /** $1 id, $2 source id, $3 source step, $4 entries (a JSON array), $5 entry count. */
  private readonly sql: string;

  constructor(schema: string) {
    const s = quoteIdentifier(schema);
    this.sql = `WITH target AS (
  UPDATE ${s}.instances SET forked_from = $2, forked_from_step = $3, journal_seq = $5 WHERE id = $1 RETURNING id
)
INSERT INTO ${s}.journal (instance_id, name, seq, entry)
SELECT t.id, e.value ->> 'name', e.ordinality, e.value FROM target t, json_array_elements($4::json) WITH ORDINALITY AS e`;
  }

  async record(tx: SqlExecutor, fork: WorkflowFork): Promise<void> {
    const entries = distinctEntries(fork.entries);
    await tx.query(this.sql, [fork.instance.id, fork.from.id, fork.from.step, journalJson(entries), entries.length]);
  }
}
