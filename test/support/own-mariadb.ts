// A MariaDB server of a test's own: its own data directory (mariadb-install-db) under a temp dir and
// its own port, never the shared server. The chaos test crash-restarts it (SIGKILL, then start: InnoDB
// recovers). As root (CI), it runs as the `mysql` OS user. Grant tables are skipped: any user connects.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';

const SERVER = '/usr/sbin/mariadbd';
const INSTALL = '/usr/bin/mariadb-install-db';

/** Whether MariaDB's server binaries are installed here. */
export function mariadbInstalled(): boolean {
  return existsSync(SERVER) && existsSync(INSTALL);
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const asRoot = () => process.getuid?.() === 0;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A private server: `start()`, `crashRestart()` (SIGKILL, then start), `destroy()`. */
export class OwnMariaDb {
  readonly dir: string;
  readonly dataDir: string;
  private constructor(readonly port: number) {
    this.dir = mkdtempSync(join(tmpdir(), 'nest-workflows-mariadb-'));
    this.dataDir = join(this.dir, 'data');
  }

  static async create(): Promise<OwnMariaDb> {
    const server = new OwnMariaDb(await freePort());
    const args = [
      '--no-defaults',
      `--datadir=${server.dataDir}`,
      '--skip-test-db',
      '--auth-root-authentication-method=normal',
    ];
    if (asRoot()) {
      const uid = Number(execFileSync('id', ['-u', 'mysql'], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', 'mysql'], { encoding: 'utf8' }).trim());
      chownSync(server.dir, uid, gid);
      args.push('--user=mysql');
    }
    const result = spawnSync(INSTALL, args, { encoding: 'utf8', cwd: server.dir });
    if (result.status !== 0)
      throw new Error(`mariadb-install-db failed (${result.status}): ${result.stderr || result.stdout}`);
    await server.start();
    const connection = await mysql.createConnection({ host: '127.0.0.1', port: server.port, user: 'root' });
    await connection.query('CREATE DATABASE chaos');
    await connection.end();
    return server;
  }

  async start(): Promise<void> {
    const args = [
      '--no-defaults',
      `--datadir=${this.dataDir}`,
      `--port=${this.port}`,
      '--bind-address=127.0.0.1',
      `--socket=${join(this.dir, 'mariadb.sock')}`,
      `--pid-file=${join(this.dir, 'mariadb.pid')}`,
      `--log-error=${join(this.dir, 'error.log')}`,
      '--skip-grant-tables',
      '--skip-name-resolve',
      '--max-connections=200',
      '--innodb-buffer-pool-size=64M',
    ];
    const [file, argv] = asRoot() ? ['runuser', ['-u', 'mysql', '--', SERVER, ...args]] : [SERVER, args];
    spawn(file, argv, { detached: true, stdio: 'ignore', cwd: this.dir }).unref();
    for (let i = 0; i < 300; i++) {
      try {
        const connection = await mysql.createConnection({
          host: '127.0.0.1',
          port: this.port,
          user: 'root',
          connectTimeout: 1_000,
        });
        await connection.end();
        return;
      } catch {
        await sleep(100);
      }
    }
    throw new Error(`MariaDB on port ${this.port} did not start: ${this.errorLog()}`);
  }

  /** Kills the server as a crash would (no shutdown: InnoDB recovers on start), then starts it. */
  async crashRestart(): Promise<void> {
    this.kill();
    await this.start();
  }

  destroy(): void {
    this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }

  private kill(): void {
    const pidFile = join(this.dir, 'mariadb.pid');
    if (!existsSync(pidFile)) return;
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      return; // not running
    }
    // Wait until it is gone, so the restart finds the port and the data directory free.
    for (let i = 0; i < 100; i++) {
      try {
        process.kill(pid, 0);
      } catch {
        rmSync(pidFile, { force: true });
        return;
      }
      spawnSync('sleep', ['0.05']);
    }
  }

  private errorLog(): string {
    try {
      return readFileSync(join(this.dir, 'error.log'), 'utf8').split('\n').slice(-10).join('\n');
    } catch {
      return '(no error log)';
    }
  }
}
