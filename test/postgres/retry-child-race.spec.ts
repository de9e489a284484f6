import { retryChildRaceSqlTests } from '../support/retry-child-race-sql.js';

await retryChildRaceSqlTests('postgres');
