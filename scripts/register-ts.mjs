// Runs TypeScript files directly in Node with decorator metadata (used by `npm run example`):
//   node --import ./scripts/register-ts.mjs path/to/file.ts
// Registers ESM loader hooks (scripts/ts-hooks.mjs) that compile .ts/.mts files with @swc/core
// (legacy decorators + `emitDecoratorMetadata`, so Nest can inject by type), map `./x.js`
// imports to `./x.ts`, and resolve `@nestjs/workflows[/postgres|/mysql|/sqlite|/testing|/dashboard|/health]` to `src/`.
import { register } from 'node:module';

process.setSourceMapsEnabled(true);
register('./ts-hooks.mjs', import.meta.url);
