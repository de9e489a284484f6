import { createServer, type Server, type Socket } from 'node:net';
import mysql from 'mysql2/promise';
import { afterEach, describe, expect, it } from 'vitest';
import { WorkflowStoreStartupError } from '../../src/errors/workflow-store-startup.error.js';
import { fromMysql2, MySqlWorkflowStore } from '../../src/mysql/index.js';

// Startup against a server that accepts connections and never says a word, started here: no MariaDB needed.
let server: Server | undefined;
const sockets = new Set<Socket>();
let pool: mysql.Pool | undefined;

afterEach(async () => {
  for (const socket of sockets) socket.destroy();
  sockets.clear();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
  await pool?.end().catch(() => undefined);
  pool = undefined;
});

async function silentServer(): Promise<number> {
  server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

describe('MySqlWorkflowStore startup', () => {
  it('fails within startupTimeout, naming the server, when it accepts connections and never answers', async () => {
    const port = await silentServer();
    pool = mysql.createPool({ uri: `mysql://root:secret@127.0.0.1:${port}/app` });
    const store = new MySqlWorkflowStore({ executor: fromMysql2(pool), schema: 'wf', startupTimeout: '300ms' });
    const started = Date.now();
    const failure = (await store.init().catch((error: unknown) => error)) as WorkflowStoreStartupError;
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(failure).toBeInstanceOf(WorkflowStoreStartupError);
    expect(failure).toMatchObject({
      problem: 'no-answer',
      store: 'MySqlWorkflowStore',
      target: `127.0.0.1:${port} database app`,
    });
    expect(failure.message).toContain(
      `MySqlWorkflowStore could not start (MySQL at 127.0.0.1:${port} database app): the server did not answer within 300 ms`,
    );
    expect(failure.message).toMatch(/startupTimeout.*connectTimeout/);
    expect(failure.message).not.toContain('secret');
  });

  it('refuses an invalid startupTimeout, naming the option', () => {
    pool = mysql.createPool({ host: '127.0.0.1' });
    expect(() => new MySqlWorkflowStore({ executor: fromMysql2(pool!), startupTimeout: 'soon' })).toThrow(
      /startupTimeout/,
    );
  });
});
