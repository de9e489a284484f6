import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';

const src = fileURLToPath(new URL('./src', import.meta.url));

const { version } = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')) as { version: string };

export default defineConfig({
  // What tsup's build replaces too (the CLI's --version).
  define: { __PACKAGE_VERSION__: JSON.stringify(version) },
  // swc compiles the tests and sources with decorator metadata, like the tsup build does.
  plugins: [
    swc.vite({
      module: { type: 'es6' },
      jsc: {
        target: 'es2022',
        parser: { syntax: 'typescript', decorators: true },
        transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
      },
    }),
  ],
  resolve: {
    alias: [
      { find: /^@nestjs\/workflows$/, replacement: `${src}/index.ts` },
      {
        find: /^@nestjs\/workflows\/(postgres|mysql|sqlite|testing|dashboard|health)$/,
        replacement: `${src}/$1/index.ts`,
      },
    ],
  },
  test: {
    include: ['test/**/*.spec.ts'],
    setupFiles: ['./scripts/vitest-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Two test files at a time, on this project's 2-core CI machine as on larger ones: most of a
    // file's time is spent waiting on a database or a child process, and every file works in
    // schemas, tables and ports of its own, so two run side by side (a third only adds load).
    maxWorkers: 2,
  },
});
