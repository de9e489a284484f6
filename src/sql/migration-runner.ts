import type { SqlExecutor } from './sql-executor.js';
import { WorkflowSchemaError } from '../errors/workflow-schema.error.js';

/** One numbered migration: `migrations/<dialect>/<version>_<name>.sql`, its schema left as `{{schema}}`. */
export interface SqlMigration {
  version: number;
  name: string;
  /** The file's text, with `{{schema}}` where the (quoted) schema name goes. */
  sql: string;
}

/** What differs between dialects when migrating: the lock, the history table, how a file runs. */
export interface MigrationDialect {
  /**
   * The versions recorded as applied, without taking the lock; `[]` when the history table (or the
   * schema) doesn't exist yet. Never fails because something is missing.
   */
  appliedVersions(executor: SqlExecutor): Promise<number[]>;
  /**
   * Runs `fn` holding the schema's migration lock, which processes starting together all take, so
   * one migrates and the others then find the work done. `fn` runs its statements through the
   * executor it is given.
   */
  withLock<T>(executor: SqlExecutor, fn: (executor: SqlExecutor) => Promise<T>): Promise<T>;
  /** Creates the schema and the history table if they are missing (idempotent; under the lock). */
  prepare(executor: SqlExecutor): Promise<void>;
  /** Applies one migration and records it in the history table (under the lock). */
  apply(executor: SqlExecutor, migration: SqlMigration): Promise<void>;
}

/** `0001_init`: how migrations are named in messages and history tables. */
export function migrationLabel(migration: SqlMigration): string {
  return `${versionLabel(migration.version)}_${migration.name}`;
}

/** A migration version as its label starts: `4` is `0004`. */
function versionLabel(version: number): string {
  return String(version).padStart(4, '0');
}

/** Replaces the schema placeholder of a migration file with the quoted schema name. */
export function renderMigration(sql: string, quotedSchema: string): string {
  return sql.replaceAll('{{schema}}', quotedSchema);
}

/** Which store and schema a runner migrates, for its messages. */
export interface MigrationTarget {
  /** The store's class name. */
  store: string;
  schema: string;
}

/**
 * Applies a store's numbered migrations in order, each once, recorded in a history table. The
 * lock makes processes that start together migrate once: the first applies what is pending, the
 * others wait for it and then find nothing left to do.
 *
 * A schema whose history holds a migration this build doesn't ship was migrated by a newer
 * version of the package: its tables may mean what this version doesn't know. `pending()` and
 * `migrate()` refuse it with a `WorkflowSchemaError` naming the version(s), rather than use it as
 * if it were current.
 */
export class MigrationRunner {
  private readonly migrations: readonly SqlMigration[];

  constructor(
    private readonly executor: SqlExecutor,
    private readonly dialect: MigrationDialect,
    migrations: readonly SqlMigration[],
    private readonly target?: MigrationTarget,
  ) {
    this.migrations = [...migrations].sort((a, b) => a.version - b.version);
  }

  /** The migrations not applied yet, in order (read without the lock). */
  async pending(): Promise<SqlMigration[]> {
    return this.notIn(this.known(await this.dialect.appliedVersions(this.executor)));
  }

  /** Applies what is pending under the lock; resolves to what this call applied, in order. */
  async migrate(): Promise<SqlMigration[]> {
    // Most starts find the schema current: they don't need to queue for the lock.
    if ((await this.pending()).length === 0) return [];
    return this.dialect.withLock(this.executor, async (executor) => {
      await this.dialect.prepare(executor);
      // Read again under the lock: another process may have migrated while this one waited.
      // (Or one of a newer version: that one is refused here too, before anything is applied.)
      const pending = this.notIn(this.known(await this.dialect.appliedVersions(executor)));
      for (const migration of pending) await this.dialect.apply(executor, migration);
      return pending;
    });
  }

  /** `applied`, when this build ships every version in it; else the refusal. */
  private known(applied: readonly number[]): readonly number[] {
    const shipped = new Set(this.migrations.map((migration) => migration.version));
    const unknown = [...new Set(applied.filter((version) => !shipped.has(version)))].sort((a, b) => a - b);
    if (unknown.length === 0) return applied;
    const where = this.target ? `${this.target.store}: the schema "${this.target.schema}"` : 'The schema';
    const latest = this.migrations.at(-1);
    throw new WorkflowSchemaError(
      `${where} holds migration(s) ${unknown.map(versionLabel).join(', ')}, which this version of @nestjs/workflows ` +
        `doesn't know (the latest it ships is ${latest ? migrationLabel(latest) : 'none'}): a newer version of the package ` +
        'migrated it, and this one could misread or damage what that version stores, so it does not use it. Run the ' +
        'version that migrated the schema (or a later one) everywhere it is used, or give this application a schema of its own.',
    );
  }

  private notIn(applied: readonly number[]): SqlMigration[] {
    const done = new Set(applied);
    return this.migrations.filter((migration) => !done.has(migration.version));
  }
}
