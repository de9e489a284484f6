// The `nest-workflows reencrypt` command on each SQL store, run on payloads an engine wrote under an old key.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { main as cli } from '../../src/cli/index.js';
import { AesGcmPayloadCodec } from '../../src/index.js';
import { ManualWorkflowClock } from '../../src/time/manual-workflow-clock.js';
import { createContractEngine, type ContractEngine } from '../../src/testing/contract/contract-engine.js';
import { EncSleep } from '../../src/testing/contract/encryption.contract.js';
import { requireServer, SQL_KINDS, useSqlTarget } from '../support/sql-target.js';

for (const kind of SQL_KINDS) {
  const available = await requireServer(kind, 'nest-workflows reencrypt');
  let engine: ContractEngine | undefined;
  const closeEngine = async () => {
    await engine?.close();
    engine = undefined;
  };

  describe.runIf(available)(`nest-workflows reencrypt --${kind}`, () => {
    const fixture = useSqlTarget(kind, 'enccli', { beforeAll, afterAll });
    afterEach(closeEngine);

    it('rewrites the store under the current codec, with progress, and says when an old key is still needed', async () => {
      const { store, schema, url } = fixture.target;
      const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
      const k1 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'cli-old' });
      const k2 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'cli-new' });
      engine = createContractEngine(store, { workflows: [EncSleep], clock, codec: k1 });
      for (let i = 0; i < 5; i++) await engine.client.start(EncSleep, { secret: `cli-${i}` }, { id: `cli-${i}` });
      await engine.drain();
      await closeEngine();

      // The codecs module: here it hands over the test's codecs; an application's would build them
      // from its keys. One server's test exports them as default, the other's as `codecs`.
      const global = `__reencrypt_${kind}`;
      const dir = mkdtempSync(join(tmpdir(), `reencrypt-${kind}-`));
      const file = join(dir, 'codecs.mjs');
      writeFileSync(file, `export ${kind === 'postgres' ? 'default' : 'const codecs ='} () => globalThis.${global};\n`);
      const globals = globalThis as Record<string, unknown>;
      const run = async (...argv: string[]) => {
        const out: string[] = [];
        const err: string[] = [];
        const code = await cli(argv, { out: (line) => out.push(line), err: (line) => err.push(line) });
        return { code, out: out.join('\n'), err: err.join('\n') };
      };
      const flag = `--${kind}`;
      try {
        globals[global] = [k2];
        const missing = await run('reencrypt', flag, url, '--schema', schema, '--codecs', file);
        expect(missing).toMatchObject({
          code: 1,
          out: expect.stringMatching(/Not done: \d+ payloads.*could not be read.*Keep the older codecs/s),
        });

        globals[global] = [k2, k1];
        const done = await run('reencrypt', flag, url, '--schema', schema, '--codecs', file, '--batch-size', '2');
        expect(done.code).toBe(0);
        expect(done.out).toMatch(/pass 1, instances: read 2 instances.*--resume '\{"instance":\{/s);
        expect(done.out).toMatch(/Done: every payload in (schema|tables) .* is under codec "cli-new"/);
        expect(await fixture.target.dump()).not.toContain('$wfc1:cli-old:');

        // Without a URL PostgreSQL connects with the PG* environment variables; MySQL has none.
        if (kind === 'mysql')
          expect(await run('reencrypt', flag, '--codecs', file)).toMatchObject({
            code: 2,
            err: expect.stringContaining('reencrypt --mysql needs the database URL'),
          });
        expect(await run('reencrypt', flag, url)).toMatchObject({
          code: 2,
          err: expect.stringContaining('needs the codecs: --codecs'),
        });
        expect(await run('reencrypt', flag, url, '--codecs', file, '--batch-size', '0')).toMatchObject({ code: 2 });
        expect(await run('reencrypt', flag, url, '--codecs', file, '--resume', 'nope')).toMatchObject({
          code: 2,
          err: expect.stringContaining('--resume takes the cursor'),
        });
        writeFileSync(join(dir, 'bad.mjs'), 'export default 42;\n');
        expect(await run('reencrypt', flag, url, '--schema', schema, '--codecs', join(dir, 'bad.mjs'))).toMatchObject({
          code: 1,
          err: expect.stringContaining('must export (as default, "codecs" or "codec") a codec'),
        });
      } finally {
        delete globals[global];
      }

      engine = createContractEngine(store, { workflows: [EncSleep], clock, codec: k2 });
      clock.advance('1h');
      await engine.drain();
      expect(await engine.client.getStatus('cli-3')).toMatchObject({ status: 'completed', input: { secret: 'cli-3' } });
    });
  });
}
