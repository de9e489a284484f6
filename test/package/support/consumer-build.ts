// The consumer app of fixtures/consumer-app.ts compiled as a user's build would (swc with decorator
// metadata, as `tsc` with emitDecoratorMetadata): into an ES module or a CommonJS one.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { transform } from '@swc/core';

export const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));

export async function compileConsumer(to: 'es6' | 'commonjs'): Promise<string> {
  const file = fixture('consumer-app.ts');
  const output = await transform(readFileSync(file, 'utf8'), {
    filename: file,
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
