import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main as cli } from '../../src/cli/index.js';
import { WorkflowSchemaError } from '../../src/errors/workflow-schema.error.js';
import { fromPg, PostgresWorkflowStore } from '../../src/postgres/index.js';
import { migratePostgres } from '../../src/postgres/postgres-migrate.js';
import {
  createPool,
  dropSchema,
  freshSchemaName,
  pgConnection,
  PG_REQUIREMENT,
  requirePostgres,
} from '../support/postgres.js';

const available = await requirePostgres('PostgreSQL schema from a newer version');

describe.skipIf(!available)(`A PostgreSQL schema migrated by a newer version (${PG_REQUIREMENT})`, () => {
  let pool: pg.Pool;
  const schema = freshSchemaName('newer');

  beforeAll(async () => {
    pool = createPool({ max: 3 });
    await new PostgresWorkflowStore({ executor: fromPg(pool), schema }).init();
    // What a later release would leave: one more migration recorded, and what it built.
    await pool.query(`INSERT INTO "${schema}".migrations (version, name) VALUES (9001, 'from_the_future')`);
    await pool.query(`ALTER TABLE "${schema}".instances ADD COLUMN future_field text`);
  });
  afterAll(async () => {
    if (!pool) return;
    await dropSchema(pool, schema);
    await pool.end();
  });

  const history = async () =>
    (await pool.query(`SELECT version FROM "${schema}".migrations ORDER BY version`)).rows.map((r) => r.version);

  it.each([
    ['migrate: true', { migrate: true }],
    ['migrate: false', { migrate: false }],
    ['migrate not set', {}],
  ])('init() (%s) refuses it with a WorkflowSchemaError naming the version and the schema', async (_label, options) => {
    const before = await history();
    const store = new PostgresWorkflowStore({ executor: fromPg(pool), schema, ...options });
    const error = await store.init().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WorkflowSchemaError);
    expect((error as Error).message).toContain(`PostgresWorkflowStore: the schema "${schema}" holds migration(s) 9001`);
    expect((error as Error).message).toContain('a newer version of the package migrated it');
    expect(await history()).toEqual(before);
  });

  it('migrate() and `nest-workflows migrate` refuse it too, applying nothing', async () => {
    const before = await history();
    await expect(new PostgresWorkflowStore({ executor: fromPg(pool), schema }).migrate()).rejects.toThrow(
      WorkflowSchemaError,
    );
    await expect(migratePostgres(fromPg(pool), schema)).rejects.toThrow(/holds migration\(s\) 9001/);
    const url = `postgres://${pgConnection.user}@${pgConnection.host}:${pgConnection.port}/${pgConnection.database}`;
    const err: string[] = [];
    expect(
      await cli(['migrate', '--postgres', url, '--schema', schema], {
        out: () => undefined,
        err: (line) => err.push(line),
      }),
    ).toBe(1);
    expect(err.join('\n')).toContain(`the schema "${schema}" holds migration(s) 9001`);
    expect(await history()).toEqual(before);
  });
});
