// The BUILT package, as a user gets it: packed with `npm pack` (which runs `prepack`: the build and
// scripts/verify-dist.mjs), unpacked into two separate tiny apps, one ES module and one CommonJS,
// each run with plain `node`. Proves the published files, the `exports` map, the dual ESM/CJS
// build and decorator metadata (constructor injection by type) outside this repository.
//
// Packing happens in a staged copy of the sources in a temp dir, not in this checkout, so the
// build never rewrites the checkout's dist/ under another test run or a developer's build.
// Installing needs no network: the tarball is unpacked into each app's node_modules, next to
// symlinks to this repository's copies of the package's dependencies and required peers.
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { transform } from '@swc/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const fixture = fileURLToPath(new URL('./fixtures/consumer-app.ts', import.meta.url));
/** What `npm pack` needs to build and verify the package. */
const STAGED = ['package.json', 'tsconfig.json', 'tsup.config.ts', 'README.md', 'CHANGELOG.md', 'LICENSE', 'src', 'scripts', 'migrations'];

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end; never throws for a non-zero exit (the caller asserts). */
function run(command: string, args: string[], cwd: string, timeout = 120_000): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'test' };
  delete env.NODE_OPTIONS;
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env, timeout, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
      resolve({ code, stdout, stderr: error && code === null ? `${stderr}\n${error.message}` : stderr });
    });
  });
}

function show(result: Run): string {
  return `exit ${String(result.code)}\n--- stdout ---\n${result.stdout}\n--- stderr ---\n${result.stderr}`;
}

let tmp = '';
let packedFiles: string[] = [];
const consumers = { esm: '', cjs: '' };

/** Unpacks the tarball as node_modules/@nestjs/workflows and links what it needs from this repo. */
async function install(app: string, tarball: string): Promise<void> {
  const target = join(app, 'node_modules', '@nestjs', 'workflows');
  mkdirSync(target, { recursive: true });
  const untar = await run('tar', ['-xzf', tarball, '-C', target, '--strip-components=1'], app);
  if (untar.code !== 0) throw new Error(`Unpacking ${tarball} failed:\n${show(untar)}`);
  const manifest = JSON.parse(readFileSync(join(target, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
    peerDependencies?: Record<string, string>;
    peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  };
  // Optional peers (pg, mysql2, @nestjs/testing) stay out: the root entry must load without them.
  const required = [
    ...Object.keys(manifest.dependencies ?? {}),
    ...Object.keys(manifest.peerDependencies ?? {}).filter((name) => !manifest.peerDependenciesMeta?.[name]?.optional),
  ];
  for (const name of required) {
    const source = join(repo, 'node_modules', name);
    if (!existsSync(source)) throw new Error(`${name} (needed by the package) is not installed in ${repo}/node_modules: run npm ci.`);
    const link = join(app, 'node_modules', name);
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(source, link, 'dir');
  }
}

async function compile(to: 'es6' | 'commonjs'): Promise<string> {
  const output = await transform(readFileSync(fixture, 'utf8'), {
    filename: fixture,
    swcrc: false,
    configFile: false,
    module: { type: to },
    jsc: {
      target: 'es2022',
      keepClassNames: true,
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
    },
  });
  return output.code;
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'nest-workflows-package-'));
  const staging = join(tmp, 'source');
  mkdirSync(staging);
  for (const entry of STAGED) {
    if (existsSync(join(repo, entry))) cpSync(join(repo, entry), join(staging, entry), { recursive: true });
  }
  symlinkSync(join(repo, 'node_modules'), join(staging, 'node_modules'), 'dir');

  const pack = await run('npm', ['pack', '--json', '--pack-destination', tmp], staging);
  if (pack.code !== 0) throw new Error(`npm pack (build + verify-dist) failed:\n${show(pack)}`);
  // npm prints the prepack scripts' output first; the JSON report is the last thing on stdout.
  const report = JSON.parse(pack.stdout.slice(pack.stdout.lastIndexOf('\n[') + 1)) as Array<{ filename: string; files: Array<{ path: string }> }>;
  const tarball = join(tmp, report[0]!.filename);
  packedFiles = report[0]!.files.map((file) => file.path);

  const mjs = await compile('es6');
  const cjs = await compile('commonjs');
  for (const [kind, type, file, code, where] of [
    ['esm', 'module', 'app.mjs', mjs, "console.log(import.meta.resolve('@nestjs/workflows'));\n"],
    ['cjs', 'commonjs', 'app.cjs', cjs, "console.log(require.resolve('@nestjs/workflows'));\n"],
  ] as const) {
    const app = join(tmp, `consumer-${kind}`);
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: `consumer-${kind}`, private: true, type }, null, 2));
    writeFileSync(join(app, file), code);
    writeFileSync(join(app, kind === 'esm' ? 'where.mjs' : 'where.cjs'), where);
    await install(app, tarball);
    consumers[kind] = app;
  }
}, 180_000);

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('the packed package', () => {
  it('ships the build and the migrations, not the sources or tests', () => {
    for (const file of ['package.json', 'dist/index.js', 'dist/index.cjs', 'dist/index.d.ts', 'dist/index.d.cts']) expect(packedFiles).toContain(file);
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
});
