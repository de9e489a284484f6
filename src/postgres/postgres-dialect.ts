import { quoteIdentifier } from '../sql/schema-name.js';
import type { SqlDialect } from '../sql/sql-dialect.js';

/** PostgreSQL: `$n` parameters, `"name"` identifiers, tables in the store's own schema. */
export const POSTGRES_DIALECT: SqlDialect = {
  placeholder: (index) => `$${index}`,
  quote: quoteIdentifier,
  table: (schema, table) => `${quoteIdentifier(schema)}.${table}`,
};
