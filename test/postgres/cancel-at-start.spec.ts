import { afterAll, beforeAll, describe } from 'vitest';
import { cancelAtStartTests } from '../support/cancel-at-start-scenario.js';
import { requireServer, SERVER, useSqlTarget } from '../support/sql-target.js';

const available = await requireServer('postgres', 'Cancel between the claim and the first step');

describe.runIf(available)(`a cancel or terminate between the claim and the first step (${SERVER.postgres})`, () => {
  const fixture = useSqlTarget('postgres', 'cancelstart', { beforeAll, afterAll });
  cancelAtStartTests(() => fixture.target.store);
});
