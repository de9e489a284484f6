import { reopenPurgeRaceTests } from '../support/reopen-purge-race-sql.js';

await reopenPurgeRaceTests('mysql');
