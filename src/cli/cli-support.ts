import type { PgPoolLike } from '../postgres/from-pg.js';
import type { Mysql2PoolLike } from '../mysql/from-mysql2.js';

// What the commands of `nest-workflows` share: their usage errors, the checks of a database URL,
// and the drivers, loaded only when a command connects.

/** A mistake in the command line: printed with the usage, exit code 2. */
export class UsageError extends Error {}

const URL_SCHEMES = {
  postgres: { protocols: ['postgres:', 'postgresql:'], sample: 'postgres://user:password@host:5432/database' },
  mysql: { protocols: ['mysql:', 'mariadb:'], sample: 'mysql://user:password@host:3306/database' },
};

/** A URL that doesn't parse is refused as such, before a driver reads it as something else (a host named "base"). */
export function checkUrl(database: 'postgres' | 'mysql', url: string): void {
  const { protocols, sample } = URL_SCHEMES[database];
  let protocol: string;
  try {
    protocol = new URL(url).protocol;
  } catch {
    // Not echoed: a malformed URL may still hold a password.
    throw new UsageError(`--${database} needs a URL such as ${sample}; what was given does not parse as a URL.`);
  }
  if (!protocols.includes(protocol))
    throw new UsageError(`--${database} needs a URL such as ${sample}; the given one starts with ${protocol}//.`);
}

/** `--flag=value` as `[--flag, value]`; any other argument as `[arg, undefined]`. */
export function splitFlag(arg: string): [string, string | undefined] {
  const equals = arg.indexOf('=');
  return arg.startsWith('--') && equals > 0 ? [arg.slice(0, equals), arg.slice(equals + 1)] : [arg, undefined];
}

/** `pg`, loaded only when a command connects (it is an optional peer dependency). */
export async function loadPg(): Promise<{
  Pool: new (
    config: object,
  ) => PgPoolLike & { end(): Promise<void>; on(event: 'error', listener: (error: Error) => void): unknown };
}> {
  try {
    const module = (await import('pg')) as unknown as { default?: unknown; Pool?: unknown };
    return (module.default ?? module) as Awaited<ReturnType<typeof loadPg>>;
  } catch (error) {
    throw new Error(
      `nest-workflows migrate --postgres needs the 'pg' package: npm install pg (${(error as Error).message})`,
      {
        cause: error,
      },
    );
  }
}

/** `mysql2/promise`, loaded only when a command connects (it is an optional peer dependency). */
export async function loadMysql2(): Promise<{ createPool(config: object): Mysql2PoolLike & { end(): Promise<void> } }> {
  try {
    const module = (await import('mysql2/promise')) as unknown as { default?: unknown };
    return (module.default ?? module) as Awaited<ReturnType<typeof loadMysql2>>;
  } catch (error) {
    throw new Error(
      `nest-workflows migrate --mysql needs the 'mysql2' package: npm install mysql2 (${(error as Error).message})`,
      {
        cause: error,
      },
    );
  }
}

/** The URL without its password, for messages. */
export function redact(url: string | undefined): string {
  if (url === undefined) return 'the database from the PG* environment variables';
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'the given URL';
  }
}
