// A PostgreSQL server of a test's own: its own data directory (initdb) under a temp dir and its own
// port, never the shared server. The chaos test crash-restarts it. initdb and postgres refuse to run
// as root: as root (CI), they run as the `postgres` OS user.
import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The newest installed server's bin directory (`/usr/lib/postgresql/<ver>/bin`), or `null`. */
export function postgresBinDir(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length > 0 ? join(root, versions[0]!, 'bin') : null;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A private server: `start()`, `crashRestart()` (immediate-mode stop, then start), `destroy()`. */
export class OwnPostgres {
  readonly dir: string;
  readonly dataDir: string;
  private constructor(
    private readonly bin: string,
    readonly port: number,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), 'nest-workflows-pg-'));
    this.dataDir = join(this.dir, 'data');
  }

  /** initdb's a new cluster (trust auth, user postgres) and starts it on a free port. */
  static async create(bin: string): Promise<OwnPostgres> {
    const server = new OwnPostgres(bin, await freePort());
    if (process.getuid?.() === 0) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
      chownSync(server.dir, uid, gid);
    }
    server.run('initdb', [
      '-D',
      server.dataDir,
      '-U',
      'postgres',
      '--auth=trust',
      '--no-sync',
      '-E',
      'UTF8',
      '--locale=C',
    ]);
    server.start();
    return server;
  }

  /** Runs a server binary, as the `postgres` user when this process is root. */
  private run(tool: string, args: string[]): void {
    const command = join(this.bin, tool);
    const [file, argv] =
      process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args];
    const result = spawnSync(file, argv, { encoding: 'utf8', cwd: this.dir });
    if (result.status !== 0)
      throw new Error(`${tool} ${args.join(' ')} failed (${result.status}): ${result.stderr || result.stdout}`);
  }

  start(): void {
    const options = `-p ${this.port} -c listen_addresses=127.0.0.1 -k ${this.dir} -c fsync=off -c max_connections=60 -c shared_buffers=32MB`;
    this.run('pg_ctl', [
      '-D',
      this.dataDir,
      '-l',
      join(this.dir, 'server.log'),
      '-o',
      options,
      '-w',
      '-t',
      '60',
      'start',
    ]);
  }

  /** Stops the server as a crash would (`-m immediate`: no checkpoint, recovery on start), then starts it. */
  crashRestart(): void {
    this.run('pg_ctl', ['-D', this.dataDir, '-m', 'immediate', '-w', 'stop']);
    this.start();
  }

  destroy(): void {
    try {
      this.run('pg_ctl', ['-D', this.dataDir, '-m', 'immediate', '-w', 'stop']);
    } catch {
      // Not running.
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
