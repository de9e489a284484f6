import { createServer, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { WorkflowStoreStartupError } from '../../src/errors/workflow-store-startup.error.js';
import { fromPg, PostgresWorkflowStore } from '../../src/postgres/index.js';

// Startup against servers that misbehave, started here: no PostgreSQL needed.
let server: Server | undefined;
const sockets = new Set<Socket>();
let pool: pg.Pool | undefined;

afterEach(async () => {
  for (const socket of sockets) socket.destroy();
  sockets.clear();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
  await pool?.end().catch(() => undefined);
  pool = undefined;
});

/** A TCP server that accepts connections and never says a word. */
async function silentServer(): Promise<number> {
  server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

describe('PostgresWorkflowStore startup', () => {
  it('fails within startupTimeout, naming the server, when it accepts connections and never answers', async () => {
    const port = await silentServer();
    pool = new pg.Pool({ host: '127.0.0.1', port, user: 'postgres', database: 'app' });
    pool.on('error', () => undefined);
    const store = new PostgresWorkflowStore({ executor: fromPg(pool), schema: 'wf', startupTimeout: '300ms' });
    const started = Date.now();
    const failure = await store.init().then(
      () => null,
      (error: unknown) => error,
    );
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(failure).toBeInstanceOf(WorkflowStoreStartupError);
    expect(failure).toMatchObject({ problem: 'no-answer', target: `127.0.0.1:${port} database app` });
    expect((failure as Error).message).toContain(
      `PostgresWorkflowStore could not start (PostgreSQL at 127.0.0.1:${port} database app): the server did not answer within 300 ms`,
    );
    expect((failure as Error).message).toMatch(/startupTimeout.*connectionTimeoutMillis/);
  });

  it('names the server of a connection string when it refuses', async () => {
    const port = await silentServer();
    await new Promise((resolve) => server!.close(resolve)); // nothing listens there any more
    server = undefined;
    pool = new pg.Pool({ connectionString: `postgres://postgres:secret@127.0.0.1:${port}/orders` });
    pool.on('error', () => undefined);
    const store = new PostgresWorkflowStore({ executor: fromPg(pool), schema: 'wf' });
    const failure = (await store.init().catch((error: unknown) => error)) as Error;
    expect(failure.message).toContain(
      `could not start (PostgreSQL at 127.0.0.1:${port} database orders): could not reach the PostgreSQL server`,
    );
    expect(failure.message).not.toContain('secret');
  });

  it('refuses an invalid startupTimeout, naming the option', () => {
    pool = new pg.Pool({ host: '127.0.0.1' });
    expect(() => new PostgresWorkflowStore({ executor: fromPg(pool!), startupTimeout: 'soon' })).toThrow(
      /startupTimeout/,
    );
  });
});
