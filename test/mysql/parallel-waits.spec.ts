import { afterAll, beforeAll, describe } from 'vitest';
import { parallelWaitsTests } from '../support/parallel-waits-scenario.js';
import { requireServer, SERVER, useSqlTarget } from '../support/sql-target.js';

const available = await requireServer('mysql', 'Parallel waits of one signal name and key');

describe.runIf(available)(`parallel waits of one signal name and key (${SERVER.mysql})`, () => {
  const fixture = useSqlTarget('mysql', 'parwaits', { beforeAll, afterAll });
  parallelWaitsTests(() => fixture.target.store);
});
