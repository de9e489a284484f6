import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type mysql from 'mysql2/promise';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { main as cli } from '../../src/cli/index.js';
import { AesGcmPayloadCodec } from '../../src/index.js';
import { ManualWorkflowClock } from '../../src/time/manual-workflow-clock.js';
import { EncSleep, encryptionApp, runEncryptionScenario, type EncryptionApp } from '../support/encryption-scenario.js';
import { mysqlConnection, requireMysql, useMysqlStore } from '../support/mysql.js';
import { EncLoad, prepareUnderOldKey, reencryptUnderLoad } from '../support/reencryption-scenario.js';

const available = await requireMysql('Payload encryption on MySQL/MariaDB');

/** Every row of every table of the store (`<schema>_...`), as the server returns it, bytes as UTF-8 text. */
async function dumpTables(pool: mysql.Pool, schema: string): Promise<string> {
  const [tables] = await pool.query<mysql.RowDataPacket[]>(
    'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE ? ORDER BY table_name',
    [`${schema.replaceAll('_', '\\_')}\\_%`],
  );
  let out = '';
  for (const { name } of tables) {
    const [rows] = await pool.query<mysql.RowDataPacket[]>(`SELECT * FROM \`${String(name)}\``);
    out += `${String(name)}:\n${JSON.stringify(rows, (_key, value: unknown) => (value && typeof value === 'object' && (value as { type?: unknown }).type === 'Buffer' ? Buffer.from((value as { data: number[] }).data).toString('utf8') : value))}\n`;
  }
  return out;
}

describe.runIf(available)('payload encryption on MySQL/MariaDB', () => {
  const fixture = useMysqlStore('enc', { beforeAll, afterAll });
  const firstKey = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'my-key' });
  let app: EncryptionApp | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('stores no user-supplied value in plaintext in any table, and every read decodes', async () => {
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    app = await encryptionApp(fixture.store, clock, { codec: firstKey });
    await runEncryptionScenario(app, clock, 'my', () => dumpTables(fixture.pool, fixture.schema));
  });

  it('re-encrypts under load: instances written under the old key run on beside it, nothing is lost, no old payload is left', async () => {
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const k1 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'my-old' });
    const k2 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'my-new' });
    app = await encryptionApp(fixture.store, clock, { codec: k1 }, [EncLoad]);
    const ids = await prepareUnderOldKey(app, 'myload', 30);
    await app.close();
    app = await encryptionApp(fixture.store, clock, { codec: [k2, k1, firstKey] }, [EncLoad]);
    await reencryptUnderLoad(app, clock, ids, k1, () => dumpTables(fixture.pool, fixture.schema));
  });
});

describe.runIf(available)('nest-workflows reencrypt --mysql', () => {
  const fixture = useMysqlStore('enccli', { beforeAll, afterAll });

  it('rewrites the tables under the current codec, and says when an old key is still needed', async () => {
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const k1 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'cli-old' });
    const k2 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'cli-new' });
    let app = await encryptionApp(fixture.store, clock, { codec: k1 });
    for (let i = 0; i < 5; i++) await app.client.start(EncSleep, { secret: `cli-${i}` }, { id: `cli-${i}` });
    await app.worker.drain();
    await app.close();

    const dir = mkdtempSync(join(tmpdir(), 'reencrypt-my-'));
    const file = join(dir, 'codecs.mjs');
    writeFileSync(file, 'export const codecs = () => globalThis.__reencryptMyCodecs;\n');
    const globals = globalThis as { __reencryptMyCodecs?: unknown };
    const { user, password, host, port, database } = mysqlConnection;
    const url = `mysql://${user}${password ? `:${password}` : ''}@${host}:${port}/${database}`;
    const run = async (...argv: string[]) => {
      const out: string[] = [];
      const err: string[] = [];
      const code = await cli(argv, { out: (line) => out.push(line), err: (line) => err.push(line) });
      return { code, out: out.join('\n'), err: err.join('\n') };
    };
    try {
      globals.__reencryptMyCodecs = [k2];
      expect(await run('reencrypt', '--mysql', url, '--schema', fixture.schema, '--codecs', file)).toMatchObject({ code: 1, out: expect.stringContaining('Not done') });
      globals.__reencryptMyCodecs = [k2, k1];
      const done = await run('reencrypt', '--mysql', url, '--schema', fixture.schema, '--codecs', file, '--batch-size', '2');
      expect(done).toMatchObject({ code: 0, out: expect.stringMatching(/pass 1, instances: read 2 instances[\s\S]*Done: every payload in tables ".*_\*" is under codec "cli-new"/) });
      expect(await dumpTables(fixture.pool, fixture.schema)).not.toContain('$wfc1:cli-old:');
      expect(await run('reencrypt', '--mysql', '--codecs', file)).toMatchObject({ code: 2, err: expect.stringContaining('reencrypt --mysql needs the database URL') });
    } finally {
      delete globals.__reencryptMyCodecs;
    }
    app = await encryptionApp(fixture.store, clock, { codec: k2 });
    try {
      clock.advance('1h');
      await app.worker.drain();
      expect(await app.client.getStatus('cli-3')).toMatchObject({ status: 'completed', input: { secret: 'cli-3' } });
    } finally {
      await app.close();
    }
  });
});
