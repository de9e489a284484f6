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
  },
});
