import { encryptionSuites } from '../support/encryption-sql-suites.js';

await encryptionSuites('mysql');
