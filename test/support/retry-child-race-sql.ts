// The retry/child race scenario on a SQL server: a fresh schema per test.
import { describe } from 'vitest';
import type { WorkflowStore } from '../../src/index.js';
import { retryChildRaceTests } from './retry-child-race-scenario.js';
import { freshSchema, openSqlTarget, requireServer, SERVER, type SqlKind, type SqlTarget } from './sql-target.js';

/** Registers the scenario for `kind`'s test server. */
export async function retryChildRaceSqlTests(kind: SqlKind): Promise<void> {
  const available = await requireServer(kind, 'retry() racing a purge of its child');
  const open = new Map<WorkflowStore, SqlTarget>();
  describe.runIf(available)(`retry() of a parent racing a purge() or delete() of its child (${SERVER[kind]})`, () => {
    retryChildRaceTests({
      async open() {
        const target = openSqlTarget(kind, freshSchema(kind, 'rcr'));
        await target.store.init();
        open.set(target.store, target);
        return target.store;
      },
      async close(store) {
        await open.get(store)?.close({ drop: true });
        open.delete(store);
      },
    });
  });
}
