// The terminate-without-a-slot scenario on a SQL server: a fresh schema per test.
import { describe } from 'vitest';
import type { WorkflowStore } from '../../src/index.js';
import { terminateSlotsTests } from './terminate-slots-scenario.js';
import { freshSchema, openSqlTarget, requireServer, SERVER, type SqlKind, type SqlTarget } from './sql-target.js';

/** Registers the scenario for `kind`'s test server. */
export async function terminateSlotsSqlTests(kind: SqlKind): Promise<void> {
  const available = await requireServer(kind, 'terminate without a slot');
  const open = new Map<WorkflowStore, SqlTarget>();
  describe.runIf(available)(`a terminate does not wait for a concurrency slot or a rate window (${SERVER[kind]})`, () => {
    terminateSlotsTests({
      async open() {
        const target = openSqlTarget(kind, freshSchema(kind, 'tslot'));
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
