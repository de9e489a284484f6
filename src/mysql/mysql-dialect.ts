import { WorkflowSchemaError } from '../errors/workflow-schema.error.js';
import type { SqlDialect } from '../sql/sql-dialect.js';

/** `` `name` ``: a MySQL quoted identifier, for validated names and the store's own constants. */
export function quoteMysqlIdentifier(name: string): string {
  if (name.includes('`')) throw new WorkflowSchemaError(`Refusing to quote the identifier ${JSON.stringify(name)}.`);
  return `\`${name}\``;
}

/** MySQL and MariaDB: `?` parameters, `` `name` `` identifiers, tables named `<schema>_<table>`. */
export const MYSQL_DIALECT: SqlDialect = {
  placeholder: () => '?',
  quote: quoteMysqlIdentifier,
  table: (schema, table) => quoteMysqlIdentifier(`${schema}_${table}`),
};
