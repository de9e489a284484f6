// The transaction-handle suites (orm-handles-scenario.ts) on MariaDB.
import { ormHandlesScenario } from './orm-handles-scenario.js';

await ormHandlesScenario('mysql');
