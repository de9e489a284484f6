import { migrationLabel, type MigrationRunner } from './migration-runner.js';
import { DEFAULT_SCHEMA, validateSchemaName } from './schema-name.js';
import { checkKnownKeys } from '../options/known-keys.js';
import { requireExecutor, type SqlExecutor } from './sql-executor.js';
import type {
  WorkflowPayloadChange,
  WorkflowPayloadRewrite,
  WorkflowSignalPageQuery,
} from '../storage/payload-rewrite.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type {
  NewWorkflowInstance,
  WorkflowScheduleClaimRequest,
  WorkflowScheduleQuery,
  WorkflowScheduleRecord,
  WorkflowScheduleSave,
  WorkflowScheduleWrite,
  WorkflowSignalRecord,
} from '../storage/workflow-store.js';

/** What a SQL store's constructor takes (each store adds its own). */
export interface SqlWorkflowStoreOptions {
  /**
   * How the store reaches its database: `fromPg(pool)` or `fromMysql2(pool)` over your pool. The
   * application owns the pool and ends it; the store only checks out connections (its
   * transactions; on PostgreSQL one held LISTEN connection while something listens).
   */
  executor: SqlExecutor;
  /**
   * Where the store's tables live: the PostgreSQL schema (created when the store migrates), or the
   * prefix of the MySQL tables (`<schema>_instances`...) in the connection's database. Lowercase
   * letters, digits and underscores, not starting with a digit, at most 40 characters. Keep it for
   * the store alone. Default `'nest_workflows'`.
   */
  schema?: string;
  /**
   * Apply pending migrations at startup (`init()`), under a lock so processes starting together
   * migrate once. With `false`, startup fails with a `WorkflowSchemaError` while the tables are
   * behind this version of the package: apply them with `npx nest-workflows migrate`, or with your
   * own tool from the store's static `migrationSql()`. Default: `true`, except when `NODE_ENV` is
   * `production`.
   */
  migrate?: boolean;
}

/** A SQL store's schedule half: `WorkflowStore`'s schedule methods, each one statement or transaction. */
export interface SqlScheduleStore {
  save(save: WorkflowScheduleSave): Promise<WorkflowScheduleRecord | null>;
  get(id: string): Promise<WorkflowScheduleRecord | null>;
  list(query: WorkflowScheduleQuery): Promise<WorkflowScheduleRecord[]>;
  delete(id: string, revision?: number): Promise<boolean>;
  claim(request: WorkflowScheduleClaimRequest): Promise<WorkflowScheduleRecord[]>;
  write(id: string, token: string, write: WorkflowScheduleWrite): Promise<boolean>;
  createOccurrence(
    scheduleId: string,
    token: string | null,
    instance: NewWorkflowInstance,
  ): Promise<{ instance: WorkflowInstance; created: boolean } | null>;
}

/** A SQL store's re-encryption half: `WorkflowStore`'s payload-rewrite methods. */
export interface SqlPayloadRewrites {
  rewrite(id: string, rewrite: WorkflowPayloadRewrite): Promise<number>;
  page(query: WorkflowSignalPageQuery): Promise<WorkflowSignalRecord[]>;
  rewriteSignal(id: number, change: WorkflowPayloadChange): Promise<boolean>;
}

/**
 * What the SQL stores do alike, whatever their dialect: `migrate()` through their migration
 * runner, and the schedule methods through their schedule half (see each store for how).
 */
export abstract class SqlWorkflowStoreBase {
  /** The schema's name, validated. */
  readonly schema: string;
  protected readonly executor: SqlExecutor;
  /** The `migrate` option as given: `undefined` follows `NODE_ENV` (see `initSchema()`). */
  protected readonly migrateOption: boolean | undefined;

  /**
   * Checks the common options (and that no unknown key is given, `extraKeys` being the store's
   * own): `factory` names what wraps the driver's pool (for the message when `executor` is not an
   * executor), `hint` says how when it looks like a raw pool.
   */
  protected constructor(
    options: SqlWorkflowStoreOptions,
    store: string,
    factory: string,
    hint: string,
    extraKeys: readonly string[] = [],
  ) {
    checkKnownKeys(options, ['executor', 'schema', 'migrate', ...extraKeys], `${store} options`);
    this.executor = requireExecutor(options?.executor, store, factory, hint);
    this.schema = validateSchemaName(options.schema ?? DEFAULT_SCHEMA, store);
    this.migrateOption = options.migrate;
  }

  /** The store's re-encryption half. */
  protected abstract readonly payloadRewrites: SqlPayloadRewrites;

  /** The store's schedule half. */
  protected abstract readonly scheduleStore: SqlScheduleStore;

  /** A runner over the store's migrations and migration dialect. */
  protected abstract migrationRunner(): MigrationRunner;

  /** Applies the pending migrations under the migration lock; resolves to their names (`0001_init`...). */
  async migrate(): Promise<string[]> {
    return (await this.migrationRunner().migrate()).map(migrationLabel);
  }

  /** Re-encryption: replaces each payload still holding its `from` (see `payloadRewriteStatements()`). */
  rewritePayloads(id: string, rewrite: WorkflowPayloadRewrite): Promise<number> {
    return this.payloadRewrites.rewrite(id, rewrite);
  }

  /** Re-encryption: one page of every stored signal, in id order. */
  listSignals(query: WorkflowSignalPageQuery): Promise<WorkflowSignalRecord[]> {
    return this.payloadRewrites.page(query);
  }

  /** Re-encryption: replaces a signal's payload while it is still `change.from`. */
  rewriteSignalPayload(id: number, change: WorkflowPayloadChange): Promise<boolean> {
    return this.payloadRewrites.rewriteSignal(id, change);
  }

  saveSchedule(save: WorkflowScheduleSave): Promise<WorkflowScheduleRecord | null> {
    return this.scheduleStore.save(save);
  }

  getSchedule(id: string): Promise<WorkflowScheduleRecord | null> {
    return this.scheduleStore.get(id);
  }

  listSchedules(query: WorkflowScheduleQuery): Promise<WorkflowScheduleRecord[]> {
    return this.scheduleStore.list(query);
  }

  deleteSchedule(id: string, revision?: number): Promise<boolean> {
    return this.scheduleStore.delete(id, revision);
  }

  claimSchedules(request: WorkflowScheduleClaimRequest): Promise<WorkflowScheduleRecord[]> {
    return this.scheduleStore.claim(request);
  }

  writeSchedule(id: string, token: string, write: WorkflowScheduleWrite): Promise<boolean> {
    return this.scheduleStore.write(id, token, write);
  }

  createOccurrence(
    scheduleId: string,
    token: string | null,
    instance: NewWorkflowInstance,
  ): Promise<{ instance: WorkflowInstance; created: boolean } | null> {
    return this.scheduleStore.createOccurrence(scheduleId, token, instance);
  }
}
