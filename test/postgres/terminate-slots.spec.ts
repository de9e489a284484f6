import { terminateSlotsSqlTests } from '../support/terminate-slots-sql.js';

await terminateSlotsSqlTests('postgres');
