import { distinctEntries } from '../sql/distinct-entries.js';
import type { ForkStatements } from '../sql/instance-fork.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import type { WorkflowFork } from '../storage/workflow-store.js';
import { journalRows, upsertJournal } from './mysql-journal.js';
import type { MySqlTables } from './mysql-tables.js';

/** `fork()`'s statements on MySQL after the create: the origin, then the journal in one insert (AUTO_INCREMENT `seq` in row order). */
export class MySqlForks implements ForkStatements {
  constructor(private readonly tables: MySqlTables) {}

  async record(tx: SqlExecutor, fork: WorkflowFork): Promise<void> {
    const { id } = fork.instance;
    await tx.query(`UPDATE ${this.tables.instances} SET forked_from = ?, forked_from_step = ? WHERE id = ?`, [
      fork.from.id,
      fork.from.step,
      id,
    ]);
    await upsertJournal(tx, this.tables.journal, journalRows(id, distinctEntries(fork.entries)));
  }
}
