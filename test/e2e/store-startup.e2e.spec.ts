// The same fault at startup reads the same on every SQL store, in the store's error, in the
// module's retry log lines and in the CLI: which store, which server, what failed, what to check.
// Each fault on both test servers: the server down (a closed port), a database that does not
// exist, credentials the server refuses.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { Logger } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/index.js';
import { WorkflowError, WorkflowsModule, WorkflowStoreStartupError } from '../../src/index.js';
import { fromMysql2, MySqlWorkflowStore } from '../../src/mysql/index.js';
import { fromPg, PostgresWorkflowStore } from '../../src/postgres/index.js';
import { createMysqlPool, mysqlConnection } from '../support/mysql.js';
import { createPool, pgConnection } from '../support/postgres.js';
import { requireServer, SERVER, type SqlKind } from '../support/sql-target.js';

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface Connection {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
}

const STORES = {
  postgres: { store: 'PostgresWorkflowStore', server: 'PostgreSQL', scheme: 'postgres' },
  mysql: { store: 'MySqlWorkflowStore', server: 'MySQL', scheme: 'mysql' },
} as const;

/** A store on `connection`, and what closes its pool. */
function storeOn(kind: SqlKind, connection: Connection) {
  if (kind === 'postgres') {
    const pool = createPool({ ...connection, connectionTimeoutMillis: 3_000 });
    pool.on('error', () => undefined);
    return { store: new PostgresWorkflowStore({ executor: fromPg(pool), schema: 'wf' }), end: () => pool.end() };
  }
  const pool = createMysqlPool({ ...connection, connectTimeout: 3_000 });
  return { store: new MySqlWorkflowStore({ executor: fromMysql2(pool), schema: 'wf' }), end: () => pool.end() };
}

const url = (kind: SqlKind, c: Connection) =>
  `${STORES[kind].scheme}://${encodeURIComponent(c.user)}${c.password ? `:${encodeURIComponent(c.password)}` : ''}@${c.host}:${c.port}/${c.database}`;

/** Each fault: how it changes the test server's connection, and what every store says of it. */
const FAULTS: Array<{
  fault: string;
  connection: (kind: SqlKind, base: Connection) => Promise<Connection>;
  problem: WorkflowStoreStartupError['problem'];
  what: (server: string) => string;
}> = [
  {
    fault: 'the server is down (a closed port)',
    connection: async (_, base) => ({ ...base, port: await closedPort() }),
    problem: 'unreachable',
    what: (server) => `could not reach the ${server} server`,
  },
  {
    fault: 'the database does not exist',
    connection: async (_, base) => ({ ...base, database: `missing_${randomUUID().slice(0, 8)}` }),
    problem: 'unknown-database',
    what: () => 'the database does not exist',
  },
  {
    fault: 'the server refuses the credentials',
    // The test PostgreSQL trusts every login of a role it has: an unknown role is refused.
    connection: async (kind, base) =>
      kind === 'postgres' ? { ...base, user: `nobody_${randomUUID().slice(0, 8)}` } : { ...base, password: 'wrong' },
    problem: 'access-denied',
    what: () => 'the server refused the credentials',
  },
];

const base: Record<SqlKind, Connection> = {
  postgres: {
    host: pgConnection.host,
    port: pgConnection.port,
    user: pgConnection.user,
    password: pgConnection.password ?? '',
    database: pgConnection.database,
  },
  mysql: mysqlConnection,
};

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

afterEach(() => {
  vi.restoreAllMocks();
});

for (const kind of ['postgres', 'mysql'] as const) {
  const { store: storeName, server } = STORES[kind];
  describe(`startup and CLI errors on ${SERVER[kind]}`, () => {
    let available = false;
    beforeAll(async () => {
      available = await requireServer(kind, `startup errors on ${SERVER[kind]}`);
    });

    for (const { fault, connection, problem, what } of FAULTS) {
      it(`${fault}: the store, the module's retries and the CLI name the store, the server, what failed and what to check`, async (context) => {
        if (!available) return context.skip();
        const given = await connection(kind, base[kind]);
        const target = `${given.host}:${given.port} database ${given.database}`;
        const opened = storeOn(kind, given);
        try {
          const error = (await opened.store.init().catch((e: unknown) => e)) as WorkflowStoreStartupError;
          expect(error).toBeInstanceOf(WorkflowStoreStartupError);
          expect(error).toBeInstanceOf(WorkflowError);
          expect(error).toMatchObject({ name: 'WorkflowStoreStartupError', store: storeName, target, problem });
          expect(error.message).toMatch(
            new RegExp(
              `^${escape(`${storeName} could not start (${server} at ${target}): ${what(server)}.`)} Check .+ \\(${server} said: .+\\)$`,
            ),
          );
          expect(error.cause).toBeInstanceOf(Error);
          if (given.password) expect(error.message).not.toContain(given.password);

          // The module tries it again as retryAttempts says, logging each attempt with the same words.
          const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
          const module = await Test.createTestingModule({
            imports: [WorkflowsModule.forRoot({ store: opened.store, worker: false, retryAttempts: 1, retryDelay: 1 })],
          }).compile();
          await expect(module.init()).rejects.toBeInstanceOf(WorkflowStoreStartupError);
          await module.close().catch(() => undefined);
          const retries = warn.mock.calls.map((call) => String(call[0])).filter((line) => line.startsWith('Unable to'));
          expect(retries).toEqual([
            `Unable to start the workflow store (attempt 1 of 2): ${error.message} Retrying in 1 ms...`,
          ]);
        } finally {
          await opened.end();
        }

        const cli = { out: [] as string[], err: [] as string[] };
        const code = await main(['migrate', `--${kind}`, url(kind, given)], {
          out: (line) => cli.out.push(line),
          err: (line) => cli.err.push(line),
        });
        expect(code).toBe(1);
        expect(cli.err.join('\n')).toMatch(
          new RegExp(
            `^${escape(`nest-workflows migrate: ${server} at ${target}: ${what(server)}.`)} Check .+ \\(${server} said: .+\\)$`,
          ),
        );
        if (given.password) expect(cli.err.join('\n')).not.toContain(given.password);
      });
    }
  });
}
