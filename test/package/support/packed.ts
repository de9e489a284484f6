// Packs this repository as a user gets it and installs the tarball into throwaway apps, with no
// network: the tarball is unpacked into the app's node_modules, next to symlinks to this
// repository's copies of the package's dependencies, required peers and whatever the app needs.
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repo = fileURLToPath(new URL('../../..', import.meta.url));

/** What `npm pack` needs to build and verify the package. */
const STAGED = [
  'package.json',
  'tsconfig.json',
  'tsup.config.ts',
  'README.md',
  'CHANGELOG.md',
  'LICENSE',
  'src',
  'scripts',
  'migrations',
];

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end; never throws for a non-zero exit (the caller asserts). */
export function run(
  command: string,
  args: string[],
  cwd: string,
  timeout = 120_000,
  extraEnv: NodeJS.ProcessEnv = {},
): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'test', ...extraEnv };
  delete env.NODE_OPTIONS;
  // The app under test must not see this repository's vitest worker state.
  for (const key of Object.keys(env)) if (key.startsWith('VITEST')) delete env[key];
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env, timeout, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
      resolve({ code, stdout, stderr: error && code === null ? `${stderr}\n${error.message}` : stderr });
    });
  });
}

export function show(result: Run): string {
  return `exit ${String(result.code)}\n--- stdout ---\n${result.stdout}\n--- stderr ---\n${result.stderr}`;
}

/**
 * Packs a staged copy of the sources (so the build never rewrites this checkout's dist/ under
 * another test run) with `npm pack`, which runs `prepack`: the build and scripts/verify-dist.mjs.
 */
export async function pack(tmp: string): Promise<{ tarball: string; files: string[] }> {
  const staging = join(tmp, 'source');
  mkdirSync(staging);
  for (const entry of STAGED) {
    if (existsSync(join(repo, entry))) cpSync(join(repo, entry), join(staging, entry), { recursive: true });
  }
  symlinkSync(join(repo, 'node_modules'), join(staging, 'node_modules'), 'dir');
  const result = await run('npm', ['pack', '--json', '--pack-destination', tmp], staging);
  if (result.code !== 0) throw new Error(`npm pack (build + verify-dist) failed:\n${show(result)}`);
  // npm prints the prepack scripts' output first; the JSON report is the last thing on stdout.
  const report = JSON.parse(result.stdout.slice(result.stdout.lastIndexOf('\n[') + 1)) as Array<{
    filename: string;
    files: Array<{ path: string }>;
  }>;
  return { tarball: join(tmp, report[0]!.filename), files: report[0]!.files.map((file) => file.path) };
}

/**
 * Unpacks the tarball as `app`/node_modules/@nestjs/workflows and links what it needs from this
 * repository: its dependencies and required peers (optional ones, such as pg, stay out unless
 * listed in `extra`, so the root entry is proven to load without them).
 */
export async function install(app: string, tarball: string, extra: readonly string[] = []): Promise<void> {
  const target = join(app, 'node_modules', '@nestjs', 'workflows');
  mkdirSync(target, { recursive: true });
  const untar = await run('tar', ['-xzf', tarball, '-C', target, '--strip-components=1'], app);
  if (untar.code !== 0) throw new Error(`Unpacking ${tarball} failed:\n${show(untar)}`);
  const manifest = JSON.parse(readFileSync(join(target, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
    peerDependencies?: Record<string, string>;
    peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  };
  const required = [
    ...Object.keys(manifest.dependencies ?? {}),
    ...Object.keys(manifest.peerDependencies ?? {}).filter((name) => !manifest.peerDependenciesMeta?.[name]?.optional),
    ...extra,
  ];
  for (const name of new Set(required)) {
    const source = join(repo, 'node_modules', name);
    if (!existsSync(source))
      throw new Error(`${name} (needed by the package test) is not installed in ${repo}/node_modules: run npm ci.`);
    const link = join(app, 'node_modules', name);
    if (existsSync(link)) continue;
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(source, link, 'dir');
  }
}

/** This repository's TypeScript compiler, run as a user's build would run it. */
export const tsc = join(repo, 'node_modules', 'typescript', 'bin', 'tsc');
