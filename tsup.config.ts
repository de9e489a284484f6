import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { defineConfig } from 'tsup';

const CLI_OUT = 'dist/cli/index.js';
const SHEBANG = '#!/usr/bin/env node';

/**
 * The `nest-workflows` bin must start with a shebang and be executable. esbuild keeps a shebang
 * that the source has; when src/cli/index.ts has none, add it here (and shift the source map by
 * one line so it still points at the right places).
 */
function ensureCliShebang(): void {
  if (!existsSync(CLI_OUT)) return;
  const code = readFileSync(CLI_OUT, 'utf8');
  if (!code.startsWith('#!')) {
    writeFileSync(CLI_OUT, `${SHEBANG}\n${code}`);
    const mapFile = `${CLI_OUT}.map`;
    if (existsSync(mapFile)) {
      const map = JSON.parse(readFileSync(mapFile, 'utf8')) as { mappings: string };
      map.mappings = `;${map.mappings}`;
      writeFileSync(mapFile, JSON.stringify(map));
    }
  }
  chmodSync(CLI_OUT, 0o755);
}

const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };

export default defineConfig({
  // The CLI's --version.
  define: { __PACKAGE_VERSION__: JSON.stringify(version) },
  entry: {
    index: 'src/index.ts',
    'postgres/index': 'src/postgres/index.ts',
    'mysql/index': 'src/mysql/index.ts',
    'sqlite/index': 'src/sqlite/index.ts',
    'testing/index': 'src/testing/index.ts',
    'dashboard/index': 'src/dashboard/index.ts',
    'health/index': 'src/health/index.ts',
    'cli/index': 'src/cli/index.ts',
  },
  format: ['esm', 'cjs'],
  // Declarations for the library entries only (the CLI has no public types).
  dts: {
    entry: {
      index: 'src/index.ts',
      'postgres/index': 'src/postgres/index.ts',
      'mysql/index': 'src/mysql/index.ts',
      'sqlite/index': 'src/sqlite/index.ts',
      'testing/index': 'src/testing/index.ts',
      'dashboard/index': 'src/dashboard/index.ts',
      'health/index': 'src/health/index.ts',
    },
  },
  target: 'node20',
  platform: 'node',
  sourcemap: true,
  clean: true,
  // Required: one shared chunk per class, so DI tokens and `instanceof` hold across entries (CJS too).
  splitting: true,
  treeshake: false,
  outDir: 'dist',
  // Never bundle peers or drivers, even if one is missing from package.json.
  external: [
    /^@nestjs\//,
    'reflect-metadata',
    /^rxjs(\/|$)/,
    /^pg(\/|$)/,
    /^pg-/,
    /^mysql2(\/|$)/,
    /^better-sqlite3$/,
    /^node:/,
    /^vitest(\/|$)/,
    /^@opentelemetry\//,
  ],
  onSuccess: async () => {
    ensureCliShebang();
  },
});
