// The BUILT package, as a user gets it: packed with `npm pack` (which runs `prepack`: the build and
// scripts/verify-dist.mjs) and unpacked into throwaway apps outside this repository:
// - an ES module app and a CommonJS app, run with plain `node` (the exports map, the dual build,
//   decorator metadata: constructor injection by type);
// - the same small app type-checked under each module resolution a Nest app may use (node10 with
//   "module": "commonjs", node16, bundler): every entry resolves with its types;
// - every TypeScript sample of README.md and docs/ compiled against it (pages added later
//   included), so the documentation never shows code that does not compile;
// - the Jest recipe of docs/testing.md run by Jest (CommonJS, @swc/jest);
// - installed from the npm registry with `--strict-peer-deps` as a user installs it, into an app on
//   NestJS 12 (ES module) and apps on NestJS 11 (ES module and CommonJS), each running a workflow.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileConsumer, fixture } from './support/consumer-build.js';
import { codeBlocks, docSamples, sampleFile } from './support/doc-samples.js';
import { install, pack, repo, run, show, tsc } from './support/packed.js';
import { installFromRegistry } from './support/registry-install.js';

let tmp = '';
let tarball = '';
let packedFiles: string[] = [];
const consumers = { esm: '', cjs: '' };

/** A fresh app folder with the package installed (plus `extra` of this repository's modules). */
async function app(name: string, manifest: Record<string, unknown>, extra: string[] = []): Promise<string> {
  const dir = join(tmp, name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, private: true, ...manifest }, null, 2));
  await install(dir, tarball, extra);
  return dir;
}

const COMPILER_OPTIONS = {
  target: 'ES2022',
  lib: ['ES2022'],
  types: ['node'],
  strict: true,
  experimentalDecorators: true,
  emitDecoratorMetadata: true,
  esModuleInterop: true,
  noEmit: true,
};

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'nest-workflows-package-'));
  ({ tarball, files: packedFiles } = await pack(tmp));
  const mjs = await compileConsumer('es6');
  const cjs = await compileConsumer('commonjs');
  for (const [kind, type, file, code, where] of [
    ['esm', 'module', 'app.mjs', mjs, "console.log(import.meta.resolve('@nestjs/workflows'));\n"],
    ['cjs', 'commonjs', 'app.cjs', cjs, "console.log(require.resolve('@nestjs/workflows'));\n"],
  ] as const) {
    const dir = await app(`consumer-${kind}`, { type });
    writeFileSync(join(dir, file), code);
    writeFileSync(join(dir, kind === 'esm' ? 'where.mjs' : 'where.cjs'), where);
    consumers[kind] = dir;
  }
}, 180_000);

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('the packed package', () => {
  it('ships the build and the migrations, not the sources or tests', () => {
    for (const file of ['package.json', 'dist/index.js', 'dist/index.cjs', 'dist/index.d.ts', 'dist/index.d.cts'])
      expect(packedFiles).toContain(file);
    expect(packedFiles.some((file) => file.startsWith('migrations/'))).toBe(true);
    expect(packedFiles.filter((file) => /^(src|test|examples|scripts)\//.test(file))).toEqual([]);
  });

  it('runs a workflow with a constructor-injected service in an ES module app (import → dist/index.js)', async () => {
    const where = await run(process.execPath, ['where.mjs'], consumers.esm, 30_000);
    expect(where.stdout.trim(), show(where)).toMatch(/\/node_modules\/@nestjs\/workflows\/dist\/index\.js$/);
    const result = await run(process.execPath, ['app.mjs'], consumers.esm, 30_000);
    expect(result.code, show(result)).toBe(0);
    expect(result.stdout, show(result)).toMatch(/^OK \{"chargeId":"ch_42","approvedBy":"ops"\}$/m);
  });

  it('runs a workflow with a constructor-injected service in a CommonJS app (require → dist/index.cjs)', async () => {
    const where = await run(process.execPath, ['where.cjs'], consumers.cjs, 30_000);
    expect(where.stdout.trim(), show(where)).toMatch(/\/node_modules\/@nestjs\/workflows\/dist\/index\.cjs$/);
    const result = await run(process.execPath, ['app.cjs'], consumers.cjs, 30_000);
    expect(result.code, show(result)).toBe(0);
    expect(result.stdout, show(result)).toMatch(/^OK \{"chargeId":"ch_42","approvedBy":"ops"\}$/m);
  });

  it("has a bin that prints the package's version, and the usage on a mistake", async () => {
    const { version } = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { version: string };
    const bin = join(consumers.cjs, 'node_modules', '@nestjs', 'workflows', 'dist', 'cli', 'index.js');
    const printed = await run(process.execPath, [bin, '--version'], consumers.cjs, 30_000);
    expect(printed, show(printed)).toMatchObject({ code: 0, stdout: `${version}\n` });
    const bare = await run(process.execPath, [bin], consumers.cjs, 30_000);
    expect(bare.code, show(bare)).toBe(2);
    expect(bare.stderr).toMatch(/No command given\.\n\nUsage:/);
  });
});

describe('types under each module resolution', () => {
  const modes = {
    // Older Nest starters: CommonJS output and classic resolution, which ignores `exports`.
    node10: { manifest: {}, options: { module: 'commonjs', moduleResolution: 'node10' } },
    node16: { manifest: {}, options: { module: 'node16', moduleResolution: 'node16' } },
    bundler: { manifest: {}, options: { module: 'esnext', moduleResolution: 'bundler' } },
  };
  for (const [mode, { manifest, options }] of Object.entries(modes)) {
    it(`type-checks an app importing every entry with moduleResolution ${mode}`, async () => {
      const dir = await app(`types-${mode}`, manifest, ['@types/node']);
      writeFileSync(join(dir, 'app.ts'), readFileSync(fixture('typed-app.ts'), 'utf8'));
      // skipLibCheck off: the package's own declarations are checked too.
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: { ...COMPILER_OPTIONS, ...options, skipLibCheck: false },
          files: ['app.ts'],
        }),
      );
      const result = await run(process.execPath, [tsc, '-p', 'tsconfig.json', '--pretty', 'false'], dir, 120_000);
      expect(result.code, show(result)).toBe(0);
    }, 120_000);
  }
});

describe('documentation samples', () => {
  it('compiles every TypeScript sample of README.md and docs/ against the packed package', async () => {
    const samples = docSamples(repo);
    expect(samples.length).toBeGreaterThan(10);
    const dir = await app('doc-samples', { type: 'module' }, [
      '@types/node',
      '@types/pg',
      'pg',
      'mysql2',
      '@nestjs/testing',
      '@nestjs/terminus',
      'vitest',
      '@jest/globals',
      'typeorm',
      'drizzle-orm',
      'kysely',
      '@mikro-orm/core',
      '@mikro-orm/postgresql',
      '@mikro-orm/knex',
      'unplugin-swc',
    ]);
    mkdirSync(join(dir, 'samples'));
    const where = new Map<string, { page: string; line: number }>();
    for (const sample of samples) {
      const file = sampleFile(sample);
      where.set(`samples/${file}`, sample);
      // `export {}` makes each sample a module of its own (top-level await, no shared names).
      writeFileSync(join(dir, 'samples', file), `${sample.code}\nexport {};\n`);
    }
    writeFileSync(join(dir, 'doc-story.d.ts'), readFileSync(fixture('doc-story.d.ts'), 'utf8'));
    const compilerOptions = {
      ...COMPILER_OPTIONS,
      module: 'nodenext',
      moduleResolution: 'nodenext',
      skipLibCheck: true,
    };
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions, include: ['samples/*.ts', 'doc-story.d.ts'] }),
    );
    const result = await run(process.execPath, [tsc, '-p', 'tsconfig.json', '--pretty', 'false'], dir, 120_000);
    // Point each error at the page and line it comes from.
    const errors = result.stdout.replace(
      /^(samples\/[^(]+)\((\d+),(\d+)\)/gm,
      (whole, file: string, line: string, column: string) => {
        const sample = where.get(file);
        return sample ? `${sample.page}:${sample.line + Number(line) - 1}:${column}` : whole;
      },
    );
    expect(errors).toBe('');
    expect(result.code, show(result)).toBe(0);
  }, 120_000);
});

describe('Jest', () => {
  it('runs the Jest recipe of docs/testing.md (CommonJS, @swc/jest) against the packed package', async () => {
    const blocks = codeBlocks(repo, 'docs/testing.md');
    const named = (name: RegExp) => {
      const block = blocks.find((b) => name.test(b.code.split('\n')[0]!));
      if (!block) throw new Error(`docs/testing.md has no code block whose first line names ${name}`);
      return block.code;
    };
    const dir = await app('jest-app', {}, ['@nestjs/testing', '@swc/jest', '@swc/core', '@jest/globals']);
    writeFileSync(join(dir, 'jest.config.js'), named(/^\/\/ jest\.config\.js$/));
    writeFileSync(join(dir, 'send-greeting.workflow.spec.ts'), named(/^\/\/ send-greeting\.workflow\.spec\.ts$/));
    const jest = join(repo, 'node_modules', 'jest', 'bin', 'jest.js');
    const result = await run(process.execPath, [jest, '--ci', '--rootDir', dir], dir, 120_000);
    expect(result.code, show(result)).toBe(0);
    expect(result.stderr, show(result)).toMatch(/Tests: +\d+ passed, \d+ total/);
    expect(result.stderr, show(result)).not.toMatch(/failed|did not exit/);
  }, 120_000);
});

describe('installed from the npm registry with --strict-peer-deps', () => {
  // [app, module type, NestJS range, file]: Nest 12 is ESM-only, so its app is an ES module.
  const apps = [
    ['nest12-esm', 'module', '^12.0.0', 'app.mjs'],
    ['nest11-esm', 'module', '^11.0.0', 'app.mjs'],
    ['nest11-cjs', 'commonjs', '^11.0.0', 'app.cjs'],
  ] as const;
  // file-type 22 (a dependency of @nestjs/common 12) declares node >=22; README says so.
  const fileTypeWantsNode22 = Number(process.versions.node.split('.')[0]) < 22;

  for (const [name, type, nest, file] of apps) {
    it(`installs into an app on NestJS ${nest} (${type}) and runs a workflow there`, async (context) => {
      const app = await installFromRegistry(tmp, name, type, nest, tarball);
      if (app.offline) {
        const message = `the registry install test needs the npm registry: npm said ${app.offline}`;
        if (process.env.CI === 'true') throw new Error(`${message}. Failing: CI=true.`);
        console.warn(`Skipping ${message}`);
        context.skip();
      }
      expect(app.install.code, show(app.install)).toBe(0);
      const major = nest === '^12.0.0' ? 12 : 11;
      const { version } = JSON.parse(
        readFileSync(join(app.dir, 'node_modules', '@nestjs', 'core', 'package.json'), 'utf8'),
      ) as { version: string };
      expect(version.split('.')[0]).toBe(String(major));
      // No peer override (ERESOLVE), nothing a user must look into, but file-type's engines on Node 20.
      const expected = major === 12 && fileTypeWantsNode22 ? [/^npm warn EBADENGINE\b/] : [];
      const unexpected = app.warnings.filter((line) => !expected.some((pattern) => pattern.test(line)));
      expect(unexpected, show(app.install)).toEqual([]);
      const engines = app.warnings.flatMap((line) => /package: '([^']+)'/.exec(line)?.[1] ?? []);
      expect(engines, show(app.install)).toEqual(expected.length > 0 ? [expect.stringMatching(/^file-type@22\./)] : []);
      writeFileSync(join(app.dir, file), await compileConsumer(type === 'module' ? 'es6' : 'commonjs'));
      const result = await run(process.execPath, [file], app.dir, 30_000);
      expect(result.code, show(result)).toBe(0);
      expect(result.stdout, show(result)).toMatch(/^OK \{"chargeId":"ch_42","approvedBy":"ops"\}$/m);
    }, 330_000);
  }
});
