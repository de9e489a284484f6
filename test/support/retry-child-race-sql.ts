// The retry/child race scenario on a SQL server: a fresh schema per test.
import { describe } from 'vitest';
import { retryChildRaceTests } from './retry-child-race-scenario.js';
import { freshStores, requireServer, SERVER, type SqlKind } from './sql-target.js';

/** Registers the scenario for `kind`'s test server. */
export async function retryChildRaceSqlTests(kind: SqlKind): Promise<void> {
  const available = await requireServer(kind, 'retry() racing a purge of its child');
  describe.runIf(available)(`retry() of a parent racing a purge() or delete() of its child (${SERVER[kind]})`, () => {
    retryChildRaceTests(freshStores(kind, 'rcr'));
  });
}
