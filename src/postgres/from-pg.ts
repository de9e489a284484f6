import { createHash } from 'node:crypto';
import { isSqlExecutor, type SqlExecutor, type SqlQueryResult } from '../sql/sql-executor.js';
import { runTransaction } from '../sql/sql-transaction.js';

/** What the store reads of a `pg` result (structural: `pg` itself is never imported). */
export interface PgResultLike {
  rows: Record<string, unknown>[];
  rowCount: number | null;
}

/** A `pg` notification. */
export interface PgNotificationLike {
  channel: string;
  payload?: string;
}

/** A query as `pg` takes it: with a `name`, `pg` prepares it once per connection and reuses the plan. */
export interface PgQueryConfigLike {
  name?: string;
  text: string;
  values?: unknown[];
}

/** The `pg` client methods the store uses: `PoolClient` (and `Client`) have them. */
export interface PgClientLike {
  query(text: string | PgQueryConfigLike, values?: unknown[]): Promise<PgResultLike | PgResultLike[]>;
}

/** A client checked out of a pool. */
export interface PgPoolClientLike extends PgClientLike {
  /** Gives the client back; with an error (or `true`), the pool destroys it instead. */
  release(destroy?: Error | boolean): void;
  on(event: 'notification', listener: (message: PgNotificationLike) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
  removeListener(event: 'notification', listener: (message: PgNotificationLike) => void): unknown;
  removeListener(event: 'error', listener: (error: Error) => void): unknown;
  removeListener(event: 'end', listener: () => void): unknown;
}

/** The `pg` `Pool` methods the store uses. */
export interface PgPoolLike {
  query(text: string | PgQueryConfigLike, values?: unknown[]): Promise<PgResultLike | PgResultLike[]>;
  connect(): Promise<PgPoolClientLike>;
  /** What the pool was created with (read for messages only: which server it connects to). */
  options?: { host?: unknown; port?: unknown; database?: unknown; connectionString?: unknown };
}

const resultOf = (result: PgResultLike | PgResultLike[]): SqlQueryResult => {
  // A parameterless text with several statements resolves to one result per statement.
  const last = Array.isArray(result) ? result[result.length - 1] : result;
  return { rows: last?.rows ?? [], rowCount: last?.rowCount ?? 0 };
};

const statementNames = new Map<string, string>();

/**
 * A statement with parameters as a named (prepared) query: the store's statements are a fixed set
 * per schema, so each connection parses and plans each one once instead of on every call, which is
 * most of the server's work for the small writes of the hot path. Statements without parameters
 * (DDL, several statements in one text) run as plain text.
 *
 * The name is a hash of the text, not a counter: `pg` refuses a name a connection already prepared
 * with another text, and the application's pool may be shared with another copy of this module
 * (its ESM and CJS builds both loaded, or two versions), whose counter would hand out the same
 * names for other statements.
 */
function prepared(sql: string, params: readonly unknown[] | undefined): string | PgQueryConfigLike {
  if (!params || params.length === 0) return sql;
  let name = statementNames.get(sql);
  if (name === undefined) {
    name = `nest_workflows_${createHash('sha256').update(sql).digest('hex').slice(0, 32)}`;
    statementNames.set(sql, name);
  }
  return { name, text: sql, values: params as unknown[] };
}

/**
 * A `SqlExecutor` over a `pg` Pool: single statements on the pool, transactions on a client it
 * checks out (and gives back), and `listen()` on a client it holds for as long as the subscription
 * lasts. The application owns the pool and ends it; the store never does.
 *
 * @example new PostgresWorkflowStore({ executor: fromPg(new Pool({ connectionString })) })
 */
export function fromPg(pool: PgPoolLike): SqlExecutor {
  assertPool(pool);
  const executor: SqlExecutor = {
    target: poolTarget(pool),
    async query(sql, params) {
      return resultOf(await pool.query(prepared(sql, params)));
    },
    async transaction(fn) {
      const client = await pool.connect();
      const ended = { done: false };
      let lost: Error | undefined;
      // Between statements no query is active to receive a connection error: without a listener
      // the client would emit it unhandled and crash the process.
      const onError = (error: Error) => {
        lost = error;
      };
      client.on('error', onError);
      return runTransaction(
        {
          begin: async () => void (await client.query('BEGIN')),
          commit: async () => void (await client.query('COMMIT')),
          rollback: async () => void (await client.query('ROLLBACK')),
          end: (broken) => {
            ended.done = true;
            client.removeListener('error', onError);
            // A connection that failed must not be lent again: the pool destroys it.
            client.release(broken ?? lost);
          },
        },
        () => fn(fromPgClient(guard(client, ended))),
      );
    },
    async listen(channel, onNotify, onError) {
      const client = await pool.connect();
      let ended = false;
      const onNotification = (message: PgNotificationLike) => {
        if (message.channel === channel) onNotify(message.payload ?? '');
      };
      const fail = (error: Error) => {
        if (ended) return;
        ended = true;
        detach(true);
        client.release(error);
        onError?.(error);
      };
      const onClientError = (error: Error) => fail(error);
      const onEnd = () => fail(new Error(`The LISTEN connection for "${channel}" ended.`));
      // A destroyed client keeps `onClientError` (a no-op once ended): an error it emits later must
      // not crash the process. A client given back to the pool gets the pool's own listener again.
      const detach = (keepErrorListener: boolean) => {
        client.removeListener('notification', onNotification);
        client.removeListener('end', onEnd);
        if (!keepErrorListener) client.removeListener('error', onClientError);
      };
      client.on('notification', onNotification);
      client.on('error', onClientError);
      client.on('end', onEnd);
      try {
        await client.query(`LISTEN ${quoteChannel(channel)}`);
      } catch (error) {
        const failure = error instanceof Error ? error : new Error(String(error));
        if (!ended) {
          ended = true;
          detach(true);
          client.release(failure);
        }
        throw failure;
      }
      return async () => {
        if (ended) return;
        ended = true;
        try {
          await client.query(`UNLISTEN ${quoteChannel(channel)}`);
          detach(false);
          client.release();
        } catch (error) {
          detach(true);
          client.release(error instanceof Error ? error : true);
        }
      };
    },
  };
  return executor;
}

/**
 * A `SqlExecutor` over one `pg` client, for statements in a transaction the application runs on it
 * (`start(..., { transaction: client })`): every statement goes through `client`, and
 * `transaction(fn)` runs `fn` in the application's transaction rather than opening another. The
 * application begins, commits or rolls back; this never does.
 */
export function fromPgClient(client: PgClientLike): SqlExecutor {
  if (!client || typeof (client as Partial<PgClientLike>).query !== 'function') {
    throw new TypeError(
      `Expected a pg client in a transaction (a PoolClient from \`await pool.connect()\` after \`BEGIN\`), got ${describe(client)}.`,
    );
  }
  const executor: SqlExecutor = {
    async query(sql, params) {
      return resultOf(await client.query(prepared(sql, params)));
    },
    transaction: (fn) => fn(executor),
    handle: client,
  };
  return executor;
}

/**
 * The client a transaction of `fromPg()` hands out (to `ctx.transaction()` callbacks among
 * others), refusing statements once that transaction ended: the client is back in the pool then,
 * and a statement sent by code that kept it (a callback still running after its step timed out)
 * would run outside any transaction, on a connection someone else may hold.
 */
function guard<C extends PgClientLike>(client: C, ended: { done: boolean }): C {
  return new Proxy(client, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (property !== 'query' || typeof value !== 'function') {
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      }
      return (...args: unknown[]) => {
        if (ended.done) {
          return Promise.reject(
            new Error('This pg client belonged to a transaction that has ended (committed, rolled back or timed out); it is back in the pool. Use it only inside the callback, and stop when its signal aborts.'),
          );
        }
        return (value as (...args: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/**
 * The executor for an application's `transaction` argument (`start()` / `signal()` with
 * `{ transaction }`): a `SqlExecutor`, or the `pg` client it ran `BEGIN` on. A Pool is refused:
 * its statements would each run in a transaction of their own.
 */
export function pgTransactionExecutor(transaction: unknown, store: string): SqlExecutor {
  if (isSqlExecutor(transaction)) return transaction;
  if (typeof transaction === 'object' && transaction !== null && 'totalCount' in transaction) {
    throw new TypeError(
      `${store}: \`transaction\` is a pg Pool. Pass the client you ran BEGIN on (\`const client = await pool.connect()\`), ` +
        'so the statements run in your transaction.',
    );
  }
  return fromPgClient(transaction as PgClientLike);
}

function assertPool(pool: unknown): asserts pool is PgPoolLike {
  const candidate = pool as Partial<PgPoolLike> & Record<string, unknown>;
  if (typeof pool !== 'object' || pool === null || typeof candidate.query !== 'function' || typeof candidate.connect !== 'function') {
    throw new TypeError(
      `fromPg() expects a pg Pool (\`new Pool({ connectionString })\` from 'pg'), got ${describe(pool)}.`,
    );
  }
  if (typeof candidate.release === 'function') {
    throw new TypeError(
      'fromPg() expects a pg Pool, got a client checked out of one (it has release()). Pass the Pool itself: ' +
        'the store checks out its own connections (transactions, LISTEN). For a transaction of yours, pass the client ' +
        'as `{ transaction: client }` to start() or signal().',
    );
  }
  if ('connection' in candidate && !('totalCount' in candidate)) {
    throw new TypeError(
      'fromPg() expects a pg Pool, got a single pg Client. The store needs several connections (its transactions ' +
        'and a LISTEN connection): create a `new Pool(...)` and pass that.',
    );
  }
}

/**
 * Where a pool connects, as `host:port database db`, for messages: from its options or connection
 * string (never the password), else what `pg` falls back to (PGHOST, PGPORT, PGDATABASE, localhost).
 */
export function poolTarget(pool: PgPoolLike): string {
  const options = pool.options ?? {};
  let host = typeof options.host === 'string' ? options.host : undefined;
  let port = typeof options.port === 'number' || typeof options.port === 'string' ? String(options.port) : undefined;
  let database = typeof options.database === 'string' ? options.database : undefined;
  if (typeof options.connectionString === 'string') {
    try {
      const url = new URL(options.connectionString);
      host ??= decodeURIComponent(url.hostname) || url.searchParams.get('host') || undefined;
      port ??= url.port || undefined;
      database ??= decodeURIComponent(url.pathname.replace(/^\//, '')) || undefined;
    } catch {
      // Not a URL (a keyword/value string): fall back to the defaults below.
    }
  }
  host ??= process.env.PGHOST || 'localhost';
  port ??= process.env.PGPORT || '5432';
  database ??= process.env.PGDATABASE;
  return `${host}:${port}${database ? ` database ${database}` : ''}`;
}

function quoteChannel(channel: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new TypeError(`Invalid LISTEN channel ${JSON.stringify(channel)}.`);
  return `"${channel}"`;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value !== 'object') return typeof value;
  const name = (value as object).constructor?.name;
  return name && name !== 'Object' ? `a ${name}` : 'an object without query() and connect()';
}
