import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { main as cli } from '../../src/cli/index.js';
import { AesGcmPayloadCodec } from '../../src/index.js';
import { ManualWorkflowClock } from '../../src/time/manual-workflow-clock.js';
import { EncSleep, encryptionApp, runEncryptionScenario, type EncryptionApp } from '../support/encryption-scenario.js';
import { pgConnection, requirePostgres, usePostgresStore } from '../support/postgres.js';
import { EncLoad, prepareUnderOldKey, reencryptUnderLoad } from '../support/reencryption-scenario.js';

const available = await requirePostgres('Payload encryption on PostgreSQL');
/** The first test's key: the tests share one schema, so the later ones keep it in their lists. */
const firstKey = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'pg-key' });

/** Every row of every table of the store's schema, as PostgreSQL returns it (json as text). */
async function dumpSchema(pool: { query(sql: string): Promise<{ rows: Array<Record<string, unknown>> }> }, schema: string): Promise<string> {
  const tables = await pool.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = '${schema}' ORDER BY table_name`);
  let out = '';
  for (const { table_name } of tables.rows) {
    const rows = await pool.query(`SELECT row_to_json(t)::text AS row FROM "${schema}"."${String(table_name)}" t`);
    out += `${String(table_name)}:\n${rows.rows.map((r) => String(r.row)).join('\n')}\n`;
  }
  return out;
}

describe.runIf(available)('payload encryption on PostgreSQL', () => {
  const fixture = usePostgresStore('enc', { beforeAll, afterAll });
  let app: EncryptionApp | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('stores no user-supplied value in plaintext in any table, and every read decodes', async () => {
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    app = await encryptionApp(fixture.store, clock, { codec: firstKey });
    await runEncryptionScenario(app, clock, 'pg', () => dumpSchema(fixture.pool, fixture.schema));
  });

  it('re-encrypts under load: instances written under the old key run on beside it, nothing is lost, no old payload is left', async () => {
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const k1 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'pg-old' });
    const k2 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'pg-new' });
    app = await encryptionApp(fixture.store, clock, { codec: k1 }, [EncLoad]);
    const ids = await prepareUnderOldKey(app, 'pgload', 30);
    await app.close();
    app = await encryptionApp(fixture.store, clock, { codec: [k2, k1, firstKey] }, [EncLoad]);
    await reencryptUnderLoad(app, clock, ids, k1, () => dumpSchema(fixture.pool, fixture.schema));
  });

});

describe.runIf(available)('nest-workflows reencrypt on PostgreSQL', () => {
  const fixture = usePostgresStore('enccli', { beforeAll, afterAll });
  let app: EncryptionApp | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('nest-workflows reencrypt rewrites the schema under the current codec, with progress, and says when an old key is still needed', async () => {
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const k1 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'cli-old' });
    const k2 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'cli-new' });
    app = await encryptionApp(fixture.store, clock, { codec: k1 });
    for (let i = 0; i < 5; i++) await app.client.start(EncSleep, { secret: `cli-${i}` }, { id: `cli-${i}` });
    await app.worker.drain();
    await app.close();
    app = undefined;

    // The codecs module: here it hands over the test's codecs; an application's would build them from its keys.
    const dir = mkdtempSync(join(tmpdir(), 'reencrypt-'));
    const file = join(dir, 'codecs.mjs');
    writeFileSync(file, 'export default () => globalThis.__reencryptCodecs;\n');
    const globals = globalThis as { __reencryptCodecs?: unknown };
    const url = `postgres://${pgConnection.user}@${pgConnection.host}:${pgConnection.port}/${pgConnection.database}`;
    const run = async (...argv: string[]) => {
      const out: string[] = [];
      const err: string[] = [];
      const code = await cli(argv, { out: (line) => out.push(line), err: (line) => err.push(line) });
      return { code, out: out.join('\n'), err: err.join('\n') };
    };
    try {
      globals.__reencryptCodecs = [k2];
      const missing = await run('reencrypt', '--postgres', url, '--schema', fixture.schema, '--codecs', file);
      expect(missing).toMatchObject({ code: 1, out: expect.stringMatching(/Not done: \d+ payloads.*could not be read.*Keep the older codecs/s) });

      globals.__reencryptCodecs = [k2, k1];
      const done = await run('reencrypt', '--postgres', url, '--schema', fixture.schema, '--codecs', file, '--batch-size', '2');
      expect(done.code).toBe(0);
      expect(done.out).toMatch(/pass 1, instances: read 2 instances.*--resume '\{"instance":\{/);
      expect(done.out).toMatch(/Done: every payload in schema .* is under codec "cli-new"/);
      expect(await dumpSchema(fixture.pool, fixture.schema)).not.toContain('$wfc1:cli-old:');

      expect(await run('reencrypt', '--postgres', url)).toMatchObject({ code: 2, err: expect.stringContaining('needs the codecs: --codecs') });
      expect(await run('reencrypt', '--postgres', url, '--codecs', file, '--batch-size', '0')).toMatchObject({ code: 2 });
      expect(await run('reencrypt', '--postgres', url, '--codecs', file, '--resume', 'nope')).toMatchObject({ code: 2, err: expect.stringContaining('--resume takes the cursor') });
      writeFileSync(join(dir, 'bad.mjs'), 'export default 42;\n');
      expect(await run('reencrypt', '--postgres', url, '--schema', fixture.schema, '--codecs', join(dir, 'bad.mjs'))).toMatchObject({
        code: 1,
        err: expect.stringContaining('must export (as default, "codecs" or "codec") a codec'),
      });
    } finally {
      delete globals.__reencryptCodecs;
    }

    app = await encryptionApp(fixture.store, clock, { codec: k2 });
    clock.advance('1h');
    await app.worker.drain();
    expect(await app.client.getStatus('cli-3')).toMatchObject({ status: 'completed', input: { secret: 'cli-3' } });
  });
});
