import type { SqliteDatabaseLike } from './sqlite-driver.js';
import { SqliteStatements } from './sqlite-statements.js';

/**
 * How long SQLite itself waits for a lock, in milliseconds, before it reports the database busy:
 * the longest the event loop blocks on one attempt (both drivers wait synchronously). Longer waits
 * are made of such attempts with asynchronous pauses in between, so timers, I/O and heartbeats run
 * while another process holds the write lock.
 */
export const BUSY_SLICE = 5;

/** How long calls of one connection run back to back before they let the event loop turn, in milliseconds. */
const TURN_BUDGET = 10;

/** Whether `error` is SQLite's "database is locked" (`SQLITE_BUSY` and its extended codes, or `SQLITE_LOCKED`). */
export function isBusy(error: unknown): boolean {
  const { code, errcode } = (error ?? {}) as { code?: unknown; errcode?: unknown };
  if (typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'))) return true;
  // node:sqlite: ERR_SQLITE_ERROR with the primary result code in the low byte.
  return typeof errcode === 'number' && ((errcode & 0xff) === 5 || (errcode & 0xff) === 6);
}

/** A pause before the next attempt at a lock: a few milliseconds, growing, with jitter so processes don't move in step. */
function pause(attempt: number): Promise<void> {
  const ms = Math.min(2 ** attempt, 8) * (0.5 + Math.random());
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * The store's one connection, and how its transactions take SQLite's locks. Every write is one
 * `BEGIN IMMEDIATE` transaction: it takes the database's write lock before it reads anything, so
 * what it reads can't change before it commits (a deferred transaction that reads and then writes
 * fails with `SQLITE_BUSY_SNAPSHOT` once another process committed in between) and writes of all
 * processes on the file are serialized. While another process holds the lock, an attempt blocks
 * for at most `BUSY_SLICE` ms, then waits asynchronously and tries again, for up to `busyTimeout`.
 *
 * A transaction is synchronous from `BEGIN` to `COMMIT` (`read()`, `write()`), so nothing else of
 * the process runs inside it, and calls take turns, letting the event loop run every few milliseconds; only `transaction()` keeps one open across `await`s (a workflow's
 * `ctx.transaction()` callback), and every other call waits until it ends.
 */
export class SqliteConnection {
  readonly sql: SqliteStatements;
  /** Set while `transaction()` holds the connection. */
  private held: Promise<void> | null = null;
  /** Calls waiting for their turn; whether a call has it; when the event loop's current turn began. */
  private readonly waiting: Array<() => void> = [];
  private turnTaken = false;
  private turnStarted = -Infinity;

  constructor(
    readonly database: SqliteDatabaseLike,
    private readonly busyTimeout: number,
    /** Called after each commit of this connection's writes (other processes see them through `PRAGMA data_version`). */
    private readonly committed: () => void = () => undefined,
  ) {
    this.sql = new SqliteStatements(database);
  }

  /** Sets the connection up: WAL (one writer beside any number of readers), a durable commit, the busy slice. */
  async configure(): Promise<void> {
    await this.retryBusy(() => {
      this.database.exec(`PRAGMA busy_timeout = ${BUSY_SLICE}`);
      // WAL is a property of the file: the first connection switches it; later ones find it set.
      // An in-memory database stays in its own mode.
      this.sql.get('PRAGMA journal_mode = WAL');
      // FULL: each commit syncs the WAL, so a committed step survives a power loss, not just a crash.
      this.database.exec('PRAGMA synchronous = FULL');
    });
  }

  /** Runs `fn` in one read transaction (a consistent snapshot of the database). */
  async read<T>(fn: (sql: SqliteStatements) => T): Promise<T> {
    return this.retryBusy(() => {
      this.database.exec('BEGIN');
      try {
        const result = fn(this.sql);
        this.database.exec('COMMIT');
        return result;
      } catch (error) {
        this.rollback();
        throw error;
      }
    });
  }

  /**
   * Runs `fn` in one `BEGIN IMMEDIATE` transaction and commits; rolls back when it throws. `fn` may
   * run more than once (after a busy commit), so it must only read and write the database.
   */
  async write<T>(fn: (sql: SqliteStatements) => T): Promise<T> {
    const result = await this.retryBusy(() => {
      this.database.exec('BEGIN IMMEDIATE');
      try {
        const value = fn(this.sql);
        this.database.exec('COMMIT');
        return value;
      } catch (error) {
        this.rollback();
        throw error;
      }
    });
    this.committed();
    return result;
  }

  /**
   * Runs `body` in one `BEGIN IMMEDIATE` transaction held across its `await`s, commits when it
   * resolves and rolls back when it throws. Every other call of this connection waits until it ends,
   * so keep the body short, and never wait in it for the store itself (a `client.start()` without
   * `transaction` would wait for this very transaction).
   */
  async transaction<T>(body: (sql: SqliteStatements) => Promise<T>): Promise<T> {
    let release!: () => void;
    await this.retryBusy(() => {
      this.database.exec('BEGIN IMMEDIATE');
      // In the same synchronous turn as the BEGIN: no other call may start on the connection now.
      this.held = new Promise((resolve) => (release = resolve));
    });
    try {
      const result = await body(this.sql);
      this.database.exec('COMMIT');
      this.committed();
      return result;
    } catch (error) {
      this.rollback();
      throw error;
    } finally {
      this.held = null;
      release();
    }
  }

  close(): void {
    this.database.close();
  }

  private rollback(): void {
    // Nothing to undo when SQLite already ended the transaction (it rolls back on some errors).
    if (this.database.inTransaction === false || this.database.isTransaction === false) return;
    try {
      this.database.exec('ROLLBACK');
    } catch {
      // Rolled back already.
    }
  }

  /**
   * Runs `attempt` (synchronous) once no `transaction()` holds the connection, again after a pause
   * each time the database is busy, until `busyTimeout` has passed.
   */
  private async retryBusy<T>(attempt: () => T): Promise<T> {
    await this.turn();
    let turnOver = false;
    const endTurn = () => {
      if (turnOver) return;
      turnOver = true;
      this.passTurn();
    };
    try {
      const deadline = Date.now() + this.busyTimeout;
      for (let tries = 0; ; tries++) {
        if (this.held) {
          endTurn();
          while (this.held) await this.held;
        }
        // The application's own transaction on a database it shares with the store: wait for its end
        // as for another process's lock (a BEGIN inside it would fail, a statement would join it).
        if (this.database.inTransaction === true || this.database.isTransaction === true) {
          endTurn();
          if (Date.now() >= deadline) throw this.busyTimedOut(undefined);
          await pause(tries);
          continue;
        }
        try {
          return attempt();
        } catch (error) {
          if (!isBusy(error)) throw error;
          endTurn();
          if (Date.now() >= deadline) throw this.busyTimedOut(error);
          await pause(tries);
        }
      }
    } finally {
      endTurn();
    }
  }

  /**
   * Resolves at this call's turn. Both drivers answer synchronously, so without turns a worker with
   * a backlog would claim, run and write in one unbroken chain of promise jobs (timers, heartbeats
   * included, would never run), and calls started together would all commit in one go. Calls run one
   * after another while a turn lasts (`TURN_BUDGET` ms); the next waits for the next turn of the
   * event loop. The connection runs one transaction at a time anyway, so order is all that changes.
   */
  private turn(): Promise<void> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      if (this.waiting.length === 1 && !this.turnTaken) this.passTurn();
    });
  }

  /** Gives the turn to the next call: at once while the budget lasts, else at the next turn of the loop. */
  private passTurn(): void {
    const next = this.waiting.shift();
    if (!next) {
      this.turnTaken = false;
      return;
    }
    this.turnTaken = true;
    if (performance.now() - this.turnStarted < TURN_BUDGET) {
      next();
      return;
    }
    setImmediate(() => {
      this.turnStarted = performance.now();
      next();
    });
  }

  private busyTimedOut(cause: unknown): Error {
    return new Error(
      `SqliteWorkflowStore: the database stayed locked for longer than busyTimeout (${this.busyTimeout} ms). ` +
        'Another connection holds its write lock (a long transaction, or a process stopped inside one), or the ' +
        'application left a transaction open on the database it gave the store.',
      { cause },
    );
  }
}
