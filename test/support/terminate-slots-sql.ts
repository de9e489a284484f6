// The terminate-without-a-slot scenario on a SQL server: a fresh schema per test.
import { describe } from 'vitest';
import { terminateSlotsTests } from './terminate-slots-scenario.js';
import { freshStores, requireServer, SERVER, type SqlKind } from './sql-target.js';

/** Registers the scenario for `kind`'s test server. */
export async function terminateSlotsSqlTests(kind: SqlKind): Promise<void> {
  const available = await requireServer(kind, 'terminate without a slot');
  describe.runIf(available)(
    `a terminate does not wait for a concurrency slot or a rate window (${SERVER[kind]})`,
    () => {
      terminateSlotsTests(freshStores(kind, 'tslot'));
    },
  );
}
