import { WorkflowSchemaError } from '../errors/workflow-schema.error.js';

/** The schema a SQL store uses when none is given. */
export const DEFAULT_SCHEMA = 'nest_workflows';

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,39}$/;

/**
 * Checks a store's `schema` option and returns it. Lowercase letters, digits and underscores, not
 * starting with a digit, at most 40 characters: a name every SQL dialect takes as is, so the stores
 * can still quote it everywhere (a reserved word such as `order` stays valid) without ever having
 * to escape anything inside the quotes.
 */
export function validateSchemaName(schema: unknown, store: string): string {
  if (typeof schema !== 'string' || !SCHEMA_NAME.test(schema)) {
    throw new WorkflowSchemaError(
      `${store}: invalid schema name ${describe(schema)}. Use lowercase letters, digits and underscores, ` +
        `not starting with a digit, at most 40 characters (${SCHEMA_NAME.source}), such as '${DEFAULT_SCHEMA}'.`,
    );
  }
  return schema;
}

/**
 * `"name"`: a PostgreSQL (or ANSI) quoted identifier. Only for names that passed
 * `validateSchemaName()` or are the store's own constants, which never contain a quote.
 */
export function quoteIdentifier(name: string): string {
  if (name.includes('"')) throw new WorkflowSchemaError(`Refusing to quote the identifier ${JSON.stringify(name)}.`);
  return `"${name}"`;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  return `${typeof value === 'object' ? (value === null ? 'null' : 'an object') : String(value)} (not a string)`;
}
