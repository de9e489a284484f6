import { MySqlDebounces } from './mysql-debounces.js';
import { retryOnLockContention } from './mysql-retry.js';
import { COMMON_GROUND, type MySqlServerFeatures } from './mysql-server.js';
import { INSTANCE_COLUMNS, MAX_BATCH_TEXT, placeholders, type MySqlTables } from './mysql-tables.js';
import {
  insertedInstance,
  NEW_INSTANCE_COLUMNS,
  newInstanceRow,
  newInstanceRowParams,
  type NewInstanceRow,
} from '../sql/instance-params.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { StatementBatcher } from '../sql/statement-batcher.js';
import { answerCreates, type CreateResult } from '../sql/create-batch.js';
import { toInstance, toNumber } from '../sql/workflow-rows.js';
import type { NewWorkflowInstance } from '../storage/workflow-store.js';

/** `create()`'s statements for the store's tables. */
function createStatements(tables: MySqlTables) {
  const columns = NEW_INSTANCE_COLUMNS.map((column) => (column === 'now' ? 'created_at' : column));
  // Each row takes the last signal id as its cursor, which the answer's insert id carries back
  // (LAST_INSERT_ID(expr) sets it), so a lone create needs no read of what it inserted.
  const lastSignal = `SELECT COALESCE(MAX(id), 0) FROM ${tables.signals}`;
  const row = `(${placeholders(columns.length + 3)}, LAST_INSERT_ID((${lastSignal})), '[]')`;
  const insert = `INSERT IGNORE INTO ${tables.instances} (${columns.join(', ')}, updated_at, status, runs, signal_cursor, wait_topics) VALUES`;
  return {
    /** One row per create: the values `made()` gives each. */
    insert: (rows: number) => `${insert} ${Array.from({ length: rows }, () => row).join(', ')}`,
    /** One row, its cursor a parameter. */
    insertWithCursor: `${insert} (${placeholders(columns.length + 4)}, '[]')`,
    // The alias on the column: after the table it would name the table, and `last` read nothing.
    lastSignal: `SELECT COALESCE(MAX(id), 0) AS last FROM ${tables.signals}`,
    /**
     * `insert`'s one row, inserted only while the schedule row (`id = ?`, with the live lease `?`,
     * or any lease for NULL; at the revision `?`, or any for NULL) is there to lock. A locking read of the schedule row inside the
     * insert's own statement: it takes the row's share lock (READ COMMITTED would otherwise read a
     * snapshot, locking nothing) and reads its newest version, so a pause, change or delete of the
     * schedule (an UPDATE or DELETE of the row) either committed first and leaves no row to insert
     * from, or waits until the insert commits.
     */
    occurrence:
      `${insert.replace(/ VALUES$/, '')} SELECT ${placeholders(columns.length + 3)}, LAST_INSERT_ID((${lastSignal})), '[]' ` +
      `FROM ${tables.schedules} WHERE id = ? AND (? IS NULL OR (lease_token = ? AND lease_until >= ?)) AND (? IS NULL OR revision = ?) LOCK IN SHARE MODE`,
    /** The schedule's id: its lease and revision. */
    scheduleLease: `SELECT lease_token, lease_until, revision FROM ${tables.schedules} WHERE id = ?`,
    /** The ids: their rows, by a locking read (it waits for a creator that has not committed yet). */
    select: (count: number) =>
      `SELECT ${INSTANCE_COLUMNS} FROM ${tables.instances} WHERE id IN (${placeholders(count)}) LOCK IN SHARE MODE`,
  };
}

/** A create's row (payloads as JSON text) and its values for the `insert` statement, made once. */
interface MadeRow {
  row: NewInstanceRow;
  values: unknown[];
}

/** A create waiting for its batch. */
interface PendingCreate extends MadeRow {
  init: NewWorkflowInstance;
}

/** The text a create sends (what `MAX_BATCH_TEXT` bounds). */
function createText({ values }: PendingCreate): number {
  let length = 0;
  for (const value of values) if (typeof value === 'string') length += value.length;
  return length;
}

/**
 * `create()` on MySQL: insert-or-ignore on the primary key (`INSERT IGNORE`: of two creates of one
 * id exactly one inserts, the other's insert waits for it and then inserts nothing), then a
 * locking read of the stored row, which sees it even under a REPEATABLE READ snapshot taken
 * before it committed. Creates made together share one commit, inserted in id order (as every
 * batch inserts), so two batches with ids in common never wait in a cycle: on MariaDB one
 * `INSERT ... RETURNING`, on the common ground one transaction.
 */
export class MySqlCreates {
  // Bounded in text too: a statement larger than the server takes would fail every create of it.
  private readonly batcher = new StatementBatcher<PendingCreate, CreateResult>({
    send: (batch) => answerCreates(batch, (firsts) => this.insertBatch(firsts)),
    single: (pending) => retryOnLockContention(() => this.createWith(this.executor, pending.init, pending)),
    bound: { weight: createText, max: MAX_BATCH_TEXT },
  });
  private readonly sql: ReturnType<typeof createStatements>;
  private readonly debounces: MySqlDebounces;
  /** What the server offers beyond the common ground: set by the store's `init()`. */
  server: MySqlServerFeatures = COMMON_GROUND;

  constructor(
    private readonly executor: SqlExecutor,
    tables: MySqlTables,
  ) {
    this.sql = createStatements(tables);
    this.debounces = new MySqlDebounces(tables, (executor, init, inApplication) =>
      inApplication ? this.createInTransaction(executor, init) : this.createWith(executor, init),
    );
  }

  /** Batched with the creates made at the same time (a debounced one is a transaction of its own). */
  create(init: NewWorkflowInstance): Promise<CreateResult> {
    if (init.debounce) return this.debounces.create(this.executor, init);
    return this.batcher.add({ init, ...made(init) });
  }

  /**
   * One create on the pool: a new row is the values it was inserted with, and the cursor the
   * answer carries; an existing one is read.
   */
  async createWith(
    executor: SqlExecutor,
    init: NewWorkflowInstance,
    { row, values }: MadeRow = made(init),
  ): Promise<CreateResult> {
    const { rowCount, insertId } = await executor.query(this.sql.insert(1), values);
    if (rowCount === 1 && typeof insertId === 'number')
      return { instance: insertedInstance(row, insertId), created: true };
    const { rows } = await executor.query(this.sql.select(1), [init.id]);
    if (!rows[0])
      throw new Error(`MySqlWorkflowStore: instance ${JSON.stringify(init.id)} was neither created nor found.`);
    return { instance: toInstance(rows[0]), created: rowCount === 1 };
  }

  /**
   * A schedule occurrence's create, fenced by the schedule's lease (`WorkflowStore.createOccurrence()`):
   * one statement on the pool. When it inserts nothing, the fence is read again: holding now, it
   * held at the insert too (a lease released, taken over or lapsed at `now` comes back to `token`
   * only through a write of `token`'s own holder, and a revision never comes back), so the instance
   * existed and is read; not holding, or no instance after all, nothing was created under it (`null`).
   */
  async createOccurrence(
    scheduleId: string,
    token: string | null,
    init: NewWorkflowInstance,
    revision?: number,
  ): Promise<CreateResult | null> {
    const fence = [scheduleId, token, token, init.now, revision ?? null, revision ?? null];
    const { row, values } = made(init);
    const { rowCount, insertId } = await retryOnLockContention(() =>
      this.executor.query(this.sql.occurrence, [...values, ...fence]),
    );
    if (rowCount === 1 && typeof insertId === 'number')
      return { instance: insertedInstance(row, insertId), created: true };
    const { rows: lease } = await this.executor.query(this.sql.scheduleLease, [scheduleId]);
    const schedule = lease[0];
    const held =
      schedule &&
      (revision === undefined || toNumber(schedule.revision) === revision) &&
      (token === null ||
        (schedule.lease_token === token &&
          schedule.lease_until !== null &&
          toNumber(schedule.lease_until) >= init.now));
    if (!held) return null;
    const { rows } = await this.executor.query(this.sql.select(1), [init.id]);
    return rows[0] ? { instance: toInstance(rows[0]), created: rowCount === 1 } : null;
  }

  /**
   * One create in the application's transaction. The last signal id is read first, by a plain
   * read (a snapshot, which locks nothing): read inside the `INSERT`, under REPEATABLE READ (the
   * default) it would take a shared lock on the signals' last row and the gap after it, so every
   * signal of every process would wait until the application's transaction ends.
   */
  async createInTransaction(executor: SqlExecutor, init: NewWorkflowInstance): Promise<CreateResult> {
    if (init.debounce) return this.debounces.createInTransaction(executor, init);
    const { rows: last } = await executor.query(this.sql.lastSignal);
    const cursor = toNumber(last[0]?.last ?? 0);
    const { row, values } = made(init);
    const { rowCount } = await executor.query(this.sql.insertWithCursor, [...values, cursor]);
    if (rowCount === 1) return { instance: insertedInstance(row, cursor), created: true };
    const { rows } = await executor.query(this.sql.select(1), [init.id]);
    if (!rows[0])
      throw new Error(`MySqlWorkflowStore: instance ${JSON.stringify(init.id)} was neither created nor found.`);
    return { instance: toInstance(rows[0]), created: false };
  }

  private async insert(executor: SqlExecutor, values: unknown[]): Promise<boolean> {
    const { rowCount } = await executor.query(this.sql.insert(1), values);
    return rowCount === 1;
  }

  /** The first create of each id, inserted in id order (as every batch inserts). */
  private insertBatch(firsts: PendingCreate[]): Promise<Map<string, CreateResult>> {
    const inits = [...firsts].sort((x, y) => (x.init.id < y.init.id ? -1 : x.init.id > y.init.id ? 1 : 0));
    const ids = inits.map(({ init }) => init.id);
    return this.server.oneRoundTripBatches ? this.insertReturning(ids, inits) : this.insertThenRead(ids, inits);
  }

  /**
   * A batch on MariaDB (see `MySqlServerFeatures`): the insert alone, committing on its own, its
   * `RETURNING` naming the rows it inserted with their cursors, so a new instance is what it was
   * inserted with (as a lone create's); only ids that existed are read, by a locking read (it waits
   * for a creator that has not committed yet).
   */
  private async insertReturning(ids: string[], inits: PendingCreate[]): Promise<Map<string, CreateResult>> {
    const { rows } = await retryOnLockContention(() =>
      this.executor.query(
        `${this.sql.insert(inits.length)} RETURNING id, signal_cursor`,
        inits.flatMap((pending) => pending.values),
      ),
    );
    const cursors = new Map(rows.map((row) => [String(row.id), toNumber(row.signal_cursor)]));
    const created = new Map<string, CreateResult>();
    for (const { init, row } of inits) {
      const cursor = cursors.get(init.id);
      if (cursor !== undefined) created.set(init.id, { instance: insertedInstance(row, cursor), created: true });
    }
    const existing = ids.filter((id) => !created.has(id));
    if (existing.length > 0)
      for (const [id, read] of await this.read(this.executor, existing, new Set())) created.set(id, read);
    return created;
  }

  /** A batch on the common ground: one transaction inserting them all, or when some existed, one by one; then the rows read. */
  private async insertThenRead(ids: string[], inits: PendingCreate[]): Promise<Map<string, CreateResult>> {
    return retryOnLockContention(() =>
      this.executor.transaction(
        async (tx) => {
          // Most batches are all new ids: one statement. When some existed, which did is not in the
          // answer, so that batch is rolled back and inserted row by row.
          const { rowCount } = await tx.query(
            this.sql.insert(inits.length),
            inits.flatMap((pending) => pending.values),
          );
          if (rowCount !== inits.length) throw SOME_EXISTED;
          return this.read(tx, ids, new Set(ids));
        },
        { held: true },
      ),
    ).catch(async (error: unknown) => {
      if (error !== SOME_EXISTED) throw error;
      return retryOnLockContention(() =>
        this.executor.transaction(
          async (tx) => {
            const mine = new Set<string>();
            for (const { init, values } of inits) if (await this.insert(tx, values)) mine.add(init.id);
            return this.read(tx, ids, mine);
          },
          { held: true },
        ),
      );
    });
  }

  /** The stored rows of `ids`, each marked whether this batch created it. */
  private async read(tx: SqlExecutor, ids: string[], mine: Set<string>): Promise<Map<string, CreateResult>> {
    const { rows } = await tx.query(this.sql.select(ids.length), ids);
    const stored = new Map(
      rows.map((row) => [String(row.id), { instance: toInstance(row), created: mine.has(String(row.id)) }]),
    );
    for (const id of ids)
      if (!stored.has(id))
        throw new Error(`MySqlWorkflowStore: instance ${JSON.stringify(id)} was neither created nor found.`);
    return stored;
  }
}

/** Thrown inside a batch's transaction to roll it back when some of its ids existed already. */
const SOME_EXISTED = new Error('some ids of the batch existed');

/** `init`'s row and the `insert` statement's values for it: the row's, then updated_at, the status and the runs (a create leased to its caller starts running, its first run counted). */
function made(init: NewWorkflowInstance): MadeRow {
  const row = newInstanceRow(init);
  const leased = row.lease_token !== null;
  return { row, values: [...newInstanceRowParams(row), row.now, leased ? 'running' : 'pending', leased ? 1 : 0] };
}
