import { afterAll, beforeAll, describe } from 'vitest';
import { cancelAtStartTests } from '../support/cancel-at-start-scenario.js';
import { requireServer, SERVER, useSqlTarget } from '../support/sql-target.js';

const available = await requireServer('mysql', 'Cancel between the claim and the first step');

describe.runIf(available)(`a cancel or terminate between the claim and the first step (${SERVER.mysql})`, () => {
  const fixture = useSqlTarget('mysql', 'cancelstart', { beforeAll, afterAll });
  cancelAtStartTests(() => fixture.target.store);
});
