import { randomBytes } from 'node:crypto';
import { afterEach, beforeAll, afterAll, describe, it } from 'vitest';
import { AesGcmPayloadCodec } from '../../src/index.js';
import { ManualWorkflowClock } from '../../src/time/manual-workflow-clock.js';
import { encryptionApp, runEncryptionScenario, type EncryptionApp } from '../support/encryption-scenario.js';
import { requirePostgres, usePostgresStore } from '../support/postgres.js';

const available = await requirePostgres('Payload encryption on PostgreSQL');

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
    app = await encryptionApp(fixture.store, clock, { codec: new AesGcmPayloadCodec({ key: randomBytes(32), id: 'pg-key' }) });
    await runEncryptionScenario(app, clock, 'pg', () => dumpSchema(fixture.pool, fixture.schema));
  });
});
