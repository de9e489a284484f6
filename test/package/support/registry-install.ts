// Installs the packed tarball into a fresh app the way a user does: `npm install` from the npm
// registry, with npm's strict peer check, beside the NestJS major the app is on.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run, type Run } from './packed.js';

/** npm's codes for a registry it could not reach. */
const OFFLINE = /\b(ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ECONNRESET|ENETUNREACH)\b/;

export interface RegistryApp {
  dir: string;
  install: Run;
  /** The distinct `npm warn` lines the install printed (a warning may take several). */
  warnings: string[];
  /** Why the registry could not be reached, when it could not; then `install` failed for it. */
  offline: string | null;
}

/**
 * A new app folder `name` whose package.json depends on `nest` (`^11.0.0`, `^12.0.0`) for
 * `@nestjs/common` and `@nestjs/core`, the other required peers, and the tarball; then
 * `npm install --strict-peer-deps` in it. The app is outside this repository and its environment
 * carries none of the `npm_*` variables of the npm that runs the tests, so nothing of this
 * checkout (its lockfile, its prefix) takes part.
 */
export async function installFromRegistry(
  root: string,
  name: string,
  type: 'module' | 'commonjs',
  nest: string,
  tarball: string,
): Promise<RegistryApp> {
  const dir = join(root, name);
  mkdirSync(dir);
  const manifest = {
    name,
    private: true,
    type,
    dependencies: {
      '@nestjs/common': nest,
      '@nestjs/core': nest,
      'reflect-metadata': '^0.2.0',
      rxjs: '^7.8.0',
      '@nestjs/workflows': `file:${tarball}`,
    },
  };
  writeFileSync(join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
  const env: NodeJS.ProcessEnv = {};
  for (const key of Object.keys(process.env)) if (key.toLowerCase().startsWith('npm_')) env[key] = undefined;
  const install = await run(
    'npm',
    ['install', '--strict-peer-deps', '--no-audit', '--no-fund', '--loglevel=warn'],
    dir,
    300_000,
    env,
  );
  const output = `${install.stdout}\n${install.stderr}`;
  const warnings = [
    ...new Set(
      output
        .split('\n')
        .filter((line) => /^npm warn /.test(line))
        .map((line) => line.trim()),
    ),
  ];
  const offline = install.code !== 0 && OFFLINE.test(output) ? (OFFLINE.exec(output)?.[1] ?? null) : null;
  return { dir, install, warnings, offline };
}
