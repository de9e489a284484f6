import { migrationLabel, type MigrationRunner } from './migration-runner.js';
import { WorkflowSchemaError } from '../errors/workflow-schema.error.js';

/** What `initSchema()` needs to know of the store it prepares. */
export interface SchemaInit {
  runner: MigrationRunner;
  /** The store's `migrate` option as given: `undefined` follows `NODE_ENV` (see `migratesByDefault()`). */
  migrate: boolean | undefined;
  /** The store's class name, for messages. */
  store: string;
  schema: string;
  /** The CLI's database flag: `--postgres` or `--mysql`. */
  cliFlag: string;
}

/**
 * A SQL store's `init()`: migrates, or with `migrate: false` fails with a `WorkflowSchemaError`
 * naming the migrations that are missing and the three ways to apply them.
 */
export async function initSchema({ runner, migrate, store, schema, cliFlag }: SchemaInit): Promise<void> {
  if (migrate ?? migratesByDefault()) {
    await runner.migrate();
    return;
  }
  const pending = await runner.pending();
  if (pending.length === 0) return;
  throw new WorkflowSchemaError(
    `${store}: the schema "${schema}" is behind this version of @nestjs/workflows: migration(s) ` +
      `${pending.map(migrationLabel).join(', ')} not applied, and ${
        migrate === false
          ? '`migrate` is false'
          : '`migrate` is not set and NODE_ENV is "production", where the store leaves the schema alone unless told to (so a deploy never alters the database by surprise)'
      }. Apply them with ` +
      `\`npx nest-workflows migrate ${cliFlag} <url> --schema ${schema}\`, or run ` +
      `${store}.migrationSql('${schema}') with your migration tool, or set \`migrate: true\`.`,
  );
}

/** Whether a SQL store without a `migrate` option migrates at startup: everywhere but production. */
export function migratesByDefault(): boolean {
  return process.env.NODE_ENV !== 'production';
}
