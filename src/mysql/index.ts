// The `@nestjs/workflows/mysql` entry. The MySQL/MariaDB store is not part of this release yet (see
// CHANGELOG.md); the entry exists so the package's export map is stable. Nothing here loads a driver.
export { WorkflowSchemaError } from '../errors/workflow-schema.error.js';
