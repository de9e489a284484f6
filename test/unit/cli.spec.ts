// The CLI's command line: usage on a mistake (exit 2), --help, --version.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/index.js';

async function cli(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (line) => out.push(line), err: (line) => err.push(line) });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

describe('nest-workflows', () => {
  it('prints the usage to stderr and exits 2 with no command', async () => {
    const result = await cli();
    expect(result.code).toBe(2);
    expect(result.out).toBe('');
    expect(result.err).toMatch(/^nest-workflows: No command given\.\n\nUsage:\n {2}nest-workflows migrate --postgres/);
  });

  it('prints the usage to stderr and exits 2 with an unknown command', async () => {
    const result = await cli('migrat');
    expect(result.code).toBe(2);
    expect(result.err).toMatch(/^nest-workflows: Unknown command "migrat"\.\n\nUsage:/);
  });

  it('prints the usage to stdout and exits 0 with --help or -h', async () => {
    for (const flag of ['--help', '-h']) {
      const result = await cli(flag);
      expect(result.code).toBe(0);
      expect(result.err).toBe('');
      expect(result.out).toMatch(/^Usage:\n.*--version, -v/s);
    }
  });

  it("prints package.json's version with --version or -v", async () => {
    for (const flag of ['--version', '-v']) {
      const result = await cli(flag);
      expect(result).toEqual({ code: 0, out: version, err: '' });
    }
    expect((await cli('--version', 'extra')).code).toBe(2);
  });

  it('refuses a database URL that does not parse, or of the other database, before connecting (exit 2)', async () => {
    const garbled = await cli('migrate', '--postgres', 'not a url');
    expect(garbled.code).toBe(2);
    expect(garbled.err).toMatch(
      /^nest-workflows: --postgres needs a URL such as postgres:\/\/user:password@host:5432\/database; what was given does not parse as a URL\.\n\nUsage:/,
    );
    const secret = await cli('reencrypt', '--mysql', 'mysql//root:hunter2@db', '--codecs', 'codecs.js');
    expect(secret.code).toBe(2);
    expect(secret.err).toContain('--mysql needs a URL such as mysql://user:password@host:3306/database');
    expect(secret.err).not.toContain('hunter2');
    const other = await cli('migrate', '--mysql', 'postgres://postgres@localhost/app');
    expect(other.code).toBe(2);
    expect(other.err).toContain('the given one starts with postgres://');
  });
});
