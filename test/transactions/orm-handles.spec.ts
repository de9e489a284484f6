// The transaction-handle suites (orm-handles-scenario.ts) on PostgreSQL.
import { ormHandlesScenario } from './orm-handles-scenario.js';

await ormHandlesScenario('postgres');
