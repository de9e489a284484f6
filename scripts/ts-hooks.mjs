// ESM loader hooks for scripts/register-ts.mjs. See that file.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { transform } from '@swc/core';

const root = new URL('../', import.meta.url);
const SELF = /^@nestjs\/workflows(?:\/(postgres|mysql|sqlite|testing|dashboard|health))?$/;
const TS_FILE = /\.(?:ts|mts)$/;

export async function resolve(specifier, context, nextResolve) {
  const self = SELF.exec(specifier);
  if (self) {
    const url = new URL(self[1] ? `src/${self[1]}/index.ts` : 'src/index.ts', root);
    return { url: url.href, shortCircuit: true };
  }
  const parent = context.parentURL;
  if (parent && parent.startsWith('file:') && TS_FILE.test(new URL(parent).pathname)) {
    const relative = specifier.startsWith('./') || specifier.startsWith('../') || specifier.startsWith('/');
    if (relative && /\.(?:js|mjs)$/.test(specifier)) {
      const target = new URL(specifier, parent);
      if (!existsSync(fileURLToPath(target))) {
        const tsUrl = new URL(target.href.replace(/\.js$/, '.ts').replace(/\.mjs$/, '.mts'));
        if (existsSync(fileURLToPath(tsUrl))) return { url: tsUrl.href, shortCircuit: true };
      }
    }
  }
  return nextResolve(specifier, context);
}

export async function load(url, context, nextLoad) {
  if (url.startsWith('file:') && TS_FILE.test(new URL(url).pathname) && !url.includes('/node_modules/')) {
    const filename = fileURLToPath(url);
    const code = await readFile(filename, 'utf8');
    const output = await transform(code, {
      filename,
      swcrc: false,
      configFile: false,
      sourceMaps: 'inline',
      module: { type: 'es6' },
      jsc: {
        target: 'es2022',
        keepClassNames: true,
        parser: { syntax: 'typescript', decorators: true },
        transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
      },
    });
    return { format: 'module', source: output.code, shortCircuit: true };
  }
  return nextLoad(url, context);
}
