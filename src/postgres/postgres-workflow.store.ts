import { explainConnectionError } from './connection-error.js';
import { isSqlExecutor, pgTransactionExecutor } from './from-pg.js';
import { POSTGRES_KEY_LIMITS } from './key-limits.js';
import { claimInstances } from './postgres-claim.js';
import { postgresClaimStatements, type PostgresClaimStatements } from './postgres-claim-statements.js';
import { checkEntries, checkNewInstance, checkSignal, checkWait, distinctEntries } from './postgres-input.js';
import { PostgresCreateBatch } from './postgres-create-batch.js';
import { PostgresWriteBatch } from './postgres-write-batch.js';
import { PostgresListener } from './postgres-listener.js';
import {
  migrationLabel,
  POSTGRES_MIGRATIONS,
  postgresMigrationDialect,
  postgresMigrationSql,
} from './postgres-migrations.js';
import { PostgresSchedules } from './postgres-schedules.js';
import { postgresStatements, type PostgresStatements } from './postgres-statements.js';
import {
  postgresWriteStatements,
  type WriteParam,
  type WriteShape,
  type WriteStatement,
} from './postgres-write-statements.js';
import { WorkflowSchemaError } from '../errors/workflow-schema.error.js';
import { WorkflowError } from '../errors/workflow.error.js';
import { checkKey } from '../sql/key-limits.js';
import { MigrationRunner } from '../sql/migration-runner.js';
import { DEFAULT_SCHEMA, validateSchemaName } from '../sql/schema-name.js';
import { signalTopic } from '../sql/signal-topic.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { fromJson, toBoolean, toInstance, toJson, toNumber, toSignal, toWaits } from '../sql/workflow-rows.js';
import { FINISHED_STATUSES, type WorkflowInstance, type WorkflowJournalEntry, type WorkflowStatus } from '../storage/workflow-instance.js';
import type {
  NewWorkflowInstance,
  NewWorkflowSignal,
  WorkflowCancelRequest,
  WorkflowClaim,
  WorkflowClaimRequest,
  WorkflowInstanceDetails,
  WorkflowLeaseFlags,
  WorkflowListQuery,
  WorkflowPurgeQuery,
  WorkflowPurgeResult,
  WorkflowReopen,
  WorkflowScheduleClaimRequest,
  WorkflowScheduleQuery,
  WorkflowScheduleRecord,
  WorkflowScheduleSave,
  WorkflowScheduleWrite,
  WorkflowSignalQuery,
  WorkflowSignalRecord,
  WorkflowSignalResult,
  WorkflowStore,
  WorkflowWrite,
} from '../storage/workflow-store.js';

const STORE = 'PostgresWorkflowStore';
const FINISHED = new Set<WorkflowStatus>(FINISHED_STATUSES);

/** What `new PostgresWorkflowStore(options)` takes. */
export interface PostgresWorkflowStoreOptions {
  /**
   * How the store reaches PostgreSQL: `fromPg(pool)` over your `pg` Pool. The application owns the
   * pool and ends it; the store only checks out connections (its transactions, one held LISTEN
   * connection while something listens).
   */
  executor: SqlExecutor;
  /**
   * The PostgreSQL schema holding the store's tables, created when the store migrates. Lowercase
   * letters, digits and underscores, not starting with a digit, at most 40 characters. Keep it for
   * the store alone. Default `'nest_workflows'`.
   */
  schema?: string;
  /**
   * Apply pending migrations at startup (`init()`), under an advisory lock so processes starting
   * together migrate once. With `false`, startup fails with a `WorkflowSchemaError` while the schema
   * is behind this version of the package: apply them with `npx nest-workflows migrate`, or with
   * your own tool from `PostgresWorkflowStore.migrationSql()`. Default: `true`, except when
   * `NODE_ENV` is `production`.
   */
  migrate?: boolean;
}

/**
 * The PostgreSQL `WorkflowStore` (PostgreSQL 12 or later). Claims lease with `FOR UPDATE SKIP
 * LOCKED`; the signal lock is a transaction-scoped advisory lock on the schema; payloads are kept
 * as `json` text, exactly as written; LISTEN/NOTIFY wakes idle workers in other processes when work
 * becomes due. Keys longer than `POSTGRES_KEY_LIMITS` are refused with a `RangeError` before
 * anything is written.
 */
export class PostgresWorkflowStore implements WorkflowStore {
  /** The schema's name, validated. */
  readonly schema: string;
  private readonly executor: SqlExecutor;
  private readonly sql: PostgresStatements;
  private readonly claimSql: PostgresClaimStatements;
  private readonly writeSql: (shape: WriteShape) => WriteStatement;
  private readonly schedules: PostgresSchedules;
  private readonly migrateOnInit: boolean;
  private listener: PostgresListener | null = null;
  private readonly creates: PostgresCreateBatch;
  private readonly writes: PostgresWriteBatch;
  /** Per instance with writes in progress: settles when its last write did (see `inOrder()`). */
  private readonly writeTails = new Map<string, Promise<void>>();

  constructor(options: PostgresWorkflowStoreOptions) {
    if (!isSqlExecutor(options?.executor)) {
      const hint =
        typeof (options?.executor as { connect?: unknown } | undefined)?.connect === 'function'
          ? ' It looks like a pg Pool: wrap it, `executor: fromPg(pool)`.'
          : '';
      throw new TypeError(`${STORE}: \`executor\` must be a SqlExecutor such as fromPg(pool) from '@nestjs/workflows/postgres'.${hint}`);
    }
    this.executor = options.executor;
    this.schema = validateSchemaName(options.schema ?? DEFAULT_SCHEMA, STORE);
    this.sql = postgresStatements(this.schema);
    this.claimSql = postgresClaimStatements(this.schema);
    this.writeSql = postgresWriteStatements(this.schema);
    this.schedules = new PostgresSchedules(this.executor, this.schema, STORE);
    this.migrateOnInit = options.migrate ?? process.env.NODE_ENV !== 'production';
    this.writes = new PostgresWriteBatch(this.executor, this.schema, this.sql.channel, (one) =>
      this.writeOne(one.id, one.token, one.write, one.shape, one.entries),
    );
    this.creates = new PostgresCreateBatch(
      this.executor,
      this.schema,
      this.sql.channel,
      async (id) => {
        const { rows } = await this.executor.query(this.sql.getInstance, [id]);
        return rows[0] ? toInstance(rows[0]) : null;
      },
      (init) => this.createWith(this.executor, init),
    );
  }

  /**
   * Every migration as one SQL script for `schema` (default `'nest_workflows'`), for your own
   * migration tool: creates the schema and the history table, applies and records each migration.
   */
  static migrationSql(schema: string = DEFAULT_SCHEMA): string {
    return postgresMigrationSql(validateSchemaName(schema, STORE));
  }

  /** Migrates (or, with `migrate: false`, checks the schema is current). Called once at startup. */
  async init(): Promise<void> {
    try {
      if (this.migrateOnInit) {
        await this.migrate();
        return;
      }
      const pending = await this.runner().pending();
      if (pending.length > 0) {
        throw new WorkflowSchemaError(
          `${STORE}: the schema "${this.schema}" is behind this version of @nestjs/workflows: migration(s) ` +
            `${pending.map(migrationLabel).join(', ')} not applied, and \`migrate\` is false. Apply them with ` +
            `\`npx nest-workflows migrate --postgres <url> --schema ${this.schema}\`, or run ` +
            `PostgresWorkflowStore.migrationSql('${this.schema}') with your migration tool, or set \`migrate: true\`.`,
        );
      }
    } catch (error) {
      throw explainConnectionError(error, this.schema);
    }
  }

  /** Applies the pending migrations under the migration lock; resolves to their names (`0001_init`...). */
  async migrate(): Promise<string[]> {
    return (await this.runner().migrate()).map(migrationLabel);
  }

  private runner(): MigrationRunner {
    return new MigrationRunner(this.executor, postgresMigrationDialect(this.schema), POSTGRES_MIGRATIONS);
  }

  async create(instance: NewWorkflowInstance): Promise<{ instance: WorkflowInstance; created: boolean }> {
    checkNewInstance(instance);
    return this.creates.create(instance);
  }

  /**
   * `create()` in the application's transaction: `transaction` is the `pg` client it ran `BEGIN`
   * on (or a `SqlExecutor` for it). Insert-or-ignore only, so it never makes that transaction fail.
   */
  async createInTransaction(
    transaction: unknown,
    instance: NewWorkflowInstance,
  ): Promise<{ instance: WorkflowInstance; created: boolean }> {
    return this.createWith(pgTransactionExecutor(transaction, STORE), instance);
  }

  private async createWith(
    executor: SqlExecutor,
    init: NewWorkflowInstance,
  ): Promise<{ instance: WorkflowInstance; created: boolean }> {
    checkNewInstance(init);
    const { rows } = await executor.query(this.sql.create, [
      init.id,
      init.workflow,
      init.version,
      toJson(init.input ?? null),
      init.parentId ?? null,
      init.parentClose ?? null,
      init.concurrencyKey ?? null,
      init.rateLimitKey ?? null,
      init.priority ?? 0,
      init.scheduleId ?? null,
      init.scheduledAt ?? null,
      init.deadline ?? null,
      init.wakeAt ?? init.now,
      init.now,
      this.sql.channel,
      init.lease?.token ?? null,
      init.lease?.owner ?? null,
      init.lease?.leaseUntil ?? null,
    ]);
    if (rows[0]) return { instance: toInstance(rows[0]), created: toBoolean(rows[0].created) };
    // A concurrent create of the same id committed after this statement's snapshot: read it now.
    const again = await executor.query(this.sql.getInstance, [init.id]);
    if (!again.rows[0]) throw new Error(`${STORE}: instance ${JSON.stringify(init.id)} was neither created nor found.`);
    return { instance: toInstance(again.rows[0]), created: false };
  }

  async get(id: string, options?: { journal?: boolean }): Promise<WorkflowInstanceDetails | null> {
    const { rows } = await this.executor.query(options?.journal ? this.sql.getInstanceWithJournal : this.sql.getInstance, [id]);
    const row = rows[0];
    if (!row) return null;
    const details: WorkflowInstanceDetails = { ...toInstance(row), waits: toWaits(row.wait_topics) };
    if (options?.journal) details.journal = (fromJson(row.journal) as WorkflowJournalEntry[] | null) ?? [];
    return details;
  }

  async list(query: WorkflowListQuery): Promise<WorkflowInstance[]> {
    const params: unknown[] = [];
    const where: string[] = [];
    const add = (condition: (param: string) => string, value: unknown) => {
      params.push(value);
      where.push(condition(`$${params.length}`));
    };
    if (query.status !== undefined) add((p) => `status = ANY(${p}::text[])`, query.status);
    if (query.workflow !== undefined) add((p) => `workflow = ${p}`, query.workflow);
    if (query.version !== undefined) add((p) => `version = ${p}`, query.version);
    if (query.parentId !== undefined) add((p) => `parent_id = ${p}`, query.parentId);
    if (query.scheduleId !== undefined) add((p) => `schedule_id = ${p}`, query.scheduleId);
    params.push(query.limit, query.offset);
    const sql =
      `${this.sql.listPrefix}${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''}` +
      ` ORDER BY created_at, id LIMIT $${params.length - 1} OFFSET $${params.length}`;
    const { rows } = await this.executor.query(sql, params);
    return rows.map(toInstance);
  }

  async requestCancel(id: string, request: WorkflowCancelRequest): Promise<boolean> {
    const sql = request.terminate ? this.sql.requestTerminate : this.sql.requestCancel;
    const { rowCount } = await this.executor.query(sql, [id, request.reason, request.now, this.sql.channel]);
    return rowCount > 0;
  }

  async reopen(id: string, reopen: WorkflowReopen): Promise<boolean> {
    checkEntries(id, reopen.entries);
    const { rows } = await this.executor.query(this.sql.reopen, [
      id,
      reopen.expect.status,
      reopen.expect.runs,
      reopen.status,
      toJson(reopen.error),
      reopen.deadline !== undefined,
      reopen.deadline ?? null,
      reopen.now,
      JSON.stringify(distinctEntries(reopen.entries)),
      distinctEntries(reopen.entries).length,
      this.sql.channel,
    ]);
    return rows.length > 0;
  }

  async delete(id: string, statuses: readonly WorkflowStatus[]): Promise<boolean> {
    if (statuses.length === 0) return false;
    const { rowCount } = await this.executor.query(this.sql.deleteInstance, [id, [...statuses]]);
    return rowCount > 0;
  }

  async signal(signal: NewWorkflowSignal): Promise<WorkflowSignalResult> {
    checkSignal(signal);
    return this.executor.transaction(async (tx) => {
      await tx.query(this.sql.lockSignalsExclusive, [this.sql.signalLockKey]);
      return this.insertSignal(tx, signal);
    });
  }

  /**
   * `signal()` in the application's transaction: `transaction` is the `pg` client it ran `BEGIN`
   * on (or a `SqlExecutor` for it), READ COMMITTED (other levels are refused: the wake-up would
   * miss waits committed after the transaction's snapshot). The signal lock is held until that
   * transaction ends, so keep it short.
   */
  async signalInTransaction(transaction: unknown, signal: NewWorkflowSignal): Promise<WorkflowSignalResult> {
    checkSignal(signal);
    const executor = pgTransactionExecutor(transaction, STORE);
    const { rows } = await executor.query('SHOW transaction_isolation');
    const isolation = String(rows[0]?.transaction_isolation ?? '');
    if (isolation !== 'read committed') {
      throw new WorkflowError(
        `${STORE}: signal(..., { transaction }) needs a READ COMMITTED transaction; this one is ${isolation.toUpperCase()}. ` +
          'Under a snapshot taken before the signal lock, the wake-up would miss instances that suspended meanwhile. ' +
          'Send the signal from a READ COMMITTED transaction, or without `transaction`.',
      );
    }
    await executor.query(this.sql.lockSignalsExclusive, [this.sql.signalLockKey]);
    const held = await executor.query(this.sql.signalLockHeld, [this.sql.signalLockKey]);
    if (!toBoolean(held.rows[0]?.held)) {
      throw new WorkflowError(
        `${STORE}: signal(..., { transaction }) got a client that is not in a transaction (the signal lock ended with ` +
          'its statement). Pass the client you ran BEGIN on, before COMMIT.',
      );
    }
    return this.insertSignal(executor, signal);
  }

  /** Stores `signal` and wakes its waiters; the caller holds the exclusive signal lock. */
  private async insertSignal(executor: SqlExecutor, signal: NewWorkflowSignal): Promise<WorkflowSignalResult> {
    const { rows } = await executor.query(this.sql.insertSignal, [
      signal.name,
      signal.key,
      signalTopic(signal.name, signal.key),
      signal.dedupeId,
      toJson(signal.payload ?? null),
      signal.now,
      this.sql.channel,
    ]);
    const row = rows[0];
    if (!row) throw new Error(`${STORE}: signal ${JSON.stringify(signal.name)} was neither stored nor found.`);
    return {
      id: toNumber(row.id),
      woken: toNumber(row.woken),
      created: toBoolean(row.created),
      key: row.key === null || row.key === undefined ? null : String(row.key),
    };
  }

  async signals(query: WorkflowSignalQuery): Promise<WorkflowSignalRecord[]> {
    const { rows } = await this.executor.query(this.sql.signals, [signalTopic(query.name, query.key), query.afterId, query.upToId]);
    return rows.map(toSignal);
  }

  async purge(query: WorkflowPurgeQuery): Promise<WorkflowPurgeResult> {
    // Unfinished instances are never purged, whatever `statuses` says.
    const statuses = query.statuses.filter((status) => FINISHED.has(status));
    const instances = statuses.length === 0 ? 0 : (await this.executor.query(this.sql.purgeInstances, [statuses, query.before, query.limit])).rowCount;
    const signals = (await this.executor.query(this.sql.purgeSignals, [query.before, query.limit])).rowCount;
    const rateLimits = (await this.executor.query(this.sql.purgeRateWindows, [query.before, query.limit])).rowCount;
    return { instances, signals, rateLimits };
  }

  async claim(request: WorkflowClaimRequest): Promise<WorkflowClaim> {
    checkKey(STORE, 'lease token', request.token, POSTGRES_KEY_LIMITS.leaseToken);
    return claimInstances(this.executor, this.claimSql, request);
  }

  async renew(id: string, token: string, leaseUntil: number): Promise<WorkflowLeaseFlags | null> {
    const { rows } = await this.executor.query(this.sql.renew, [id, token, leaseUntil]);
    const row = rows[0];
    return row ? { cancelRequested: toBoolean(row.cancel_requested), terminateRequested: toBoolean(row.terminate_requested) } : null;
  }

  /**
   * One statement updates the row (only while `token` holds its lease), upserts the journal and,
   * on release, computes the wake-up; alone it needs no explicit transaction. With waits to
   * register, the shared signal lock comes first; with a signal, the exclusive one, and the signal
   * follows in the same transaction.
   */
  async write(id: string, token: string, write: WorkflowWrite): Promise<boolean> {
    checkEntries(id, write.entries);
    if (write.signal) checkSignal(write.signal);
    const { release } = write;
    if (release) for (const wait of release.waits) checkWait(wait.name, wait.key);
    const shape: WriteShape = {
      status: write.status !== undefined,
      output: write.output !== undefined,
      error: write.error !== undefined,
      customStatus: write.customStatus !== undefined,
      release: release !== undefined,
      waits: (release?.waits.length ?? 0) > 0,
    };
    const entries = distinctEntries(write.entries);
    const batched = !write.signal && !shape.waits;
    return this.inOrder(id, () =>
      batched ? this.writes.write({ id, token, entries, write, shape }) : this.writeOne(id, token, write, shape, entries),
    );
  }

  /**
   * Runs `fn` once every earlier `write()` of instance `id` settled, so one instance's writes land
   * in call order even when they take different paths (a batch, or a transaction of their own with
   * the signal lock): otherwise a suspension could land before a journal write made just before it,
   * and that write would find the lease released.
   */
  private inOrder<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.writeTails.get(id);
    const result = previous ? previous.then(fn) : fn();
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.writeTails.set(id, tail);
    void tail.then(() => {
      if (this.writeTails.get(id) === tail) this.writeTails.delete(id);
    });
    return result;
  }

  /** One write in a statement of its own: with the signal lock when it takes it, else alone in a batch. */
  private async writeOne(
    id: string,
    token: string,
    write: WorkflowWrite,
    shape: WriteShape,
    entries: readonly WorkflowJournalEntry[],
  ): Promise<boolean> {
    const { release } = write;
    const statement = this.writeSql(shape);
    const values: Record<WriteParam, unknown> = {
      id,
      token,
      entries: JSON.stringify(entries),
      count: entries.length,
      now: write.now,
      status: write.status,
      output: shape.output ? toJson(write.output) : null,
      error: shape.error ? toJson(write.error) : null,
      customStatus: shape.customStatus ? toJson(write.customStatus) : null,
      waits: release?.waits.map((wait) => signalTopic(wait.name, wait.key)),
      wakeAt: release?.wakeAt,
      cursor: release?.signalCursor,
      channel: this.sql.channel,
    };
    const params = statement.params.map((name) => values[name]);

    const { signal } = write;
    if (signal) {
      return this.executor.transaction(async (tx) => {
        await tx.query(this.sql.lockSignalsExclusive, [this.sql.signalLockKey]);
        const { rows } = await tx.query(statement.sql, params);
        if (rows.length === 0) return false;
        await this.insertSignal(tx, signal);
        return true;
      });
    }
    if (shape.waits) {
      return this.executor.transaction(async (tx) => {
        // Shared: suspensions don't wait for each other, only for signals (see signal()).
        await tx.query(this.sql.lockSignalsShared, [this.sql.signalLockKey]);
        return (await tx.query(statement.sql, params)).rows.length > 0;
      });
    }
    return (await this.executor.query(statement.sql, params)).rows.length > 0;
  }

  saveSchedule(save: WorkflowScheduleSave): Promise<WorkflowScheduleRecord | null> {
    return this.schedules.save(save);
  }

  getSchedule(id: string): Promise<WorkflowScheduleRecord | null> {
    return this.schedules.get(id);
  }

  listSchedules(query: WorkflowScheduleQuery): Promise<WorkflowScheduleRecord[]> {
    return this.schedules.list(query);
  }

  deleteSchedule(id: string, revision?: number): Promise<boolean> {
    return this.schedules.delete(id, revision);
  }

  claimSchedules(request: WorkflowScheduleClaimRequest): Promise<WorkflowScheduleRecord[]> {
    return this.schedules.claim(request);
  }

  writeSchedule(id: string, token: string, write: WorkflowScheduleWrite): Promise<boolean> {
    return this.schedules.write(id, token, write);
  }

  /**
   * Calls `listener` when another process (or this one) made work due: a start due now, a signal
   * that woke an instance, a hand-back due now, a cancel, a retry. One LISTEN connection per store,
   * reconnected with backoff when it drops (then `listener` is called once, for what it missed).
   */
  async listen(listener: () => void): Promise<() => Promise<void>> {
    this.listener ??= new PostgresListener(this.executor, this.sql.channel);
    return this.listener.add(listener);
  }

  /** Releases the LISTEN connection. The application's pool stays open: it owns it. */
  async close(): Promise<void> {
    const listener = this.listener;
    this.listener = null;
    await listener?.close();
  }
}
