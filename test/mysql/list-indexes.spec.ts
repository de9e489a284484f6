// list() filtered by status or by workflow, newest first and paged by keyset, as the dashboard
// asks: on MariaDB the page comes from migration 0002's indexes, in order, without a sort, however
// rare the matching rows are among the others.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MYSQL_DIALECT } from '../../src/mysql/mysql-dialect.js';
import { listInstancesStatement } from '../../src/sql/list-queries.js';
import type { WorkflowListQuery } from '../../src/storage/workflow-store.js';
import { requireMysql, useMysqlStore } from '../support/mysql.js';

const available = await requireMysql('list() indexes');

describe.skipIf(!available)('list() indexes on MariaDB', () => {
  const fixture = useMysqlStore('list', { beforeAll, afterAll });
  const table = () => `\`${fixture.schema}_instances\``;

  beforeAll(async () => {
    // 10,000 instances, 1 in 1,000 failed and of the workflow 'rare', with created_at ascending.
    const digits =
      '(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)';
    await fixture.pool.query(
      `INSERT INTO ${table()} (id, workflow, version, status, signal_cursor, wait_topics, created_at, updated_at)
SELECT CONCAT('i-', n), IF(n MOD 1000 = 7, 'rare', 'common'), 1, IF(n MOD 1000 = 7, 'failed', 'completed'), 0, '[]', 1000 + n, 1000 + n
FROM (SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d AS n FROM ${digits} a, ${digits} b, ${digits} c, ${digits} e) numbers`,
    );
    await fixture.pool.query(`ANALYZE TABLE ${table()}`);
  });

  const plan = async (query: Partial<WorkflowListQuery>) => {
    const { sql, params } = listInstancesStatement(MYSQL_DIALECT, `SELECT id FROM ${table()}`, {
      limit: 20,
      offset: 0,
      order: 'desc',
      ...query,
    });
    const [rows] = await fixture.pool.query(`EXPLAIN ${sql}`, params);
    const [found] = await fixture.pool.query(sql, params);
    return {
      ...(rows as Array<{ key: string | null; Extra: string | null }>)[0]!,
      ids: (found as Array<{ id: string }>).map((row) => row.id),
    };
  };

  it('reads a page of one status from (status, created_at, id), in order, without a sort', async () => {
    const first = await plan({ status: ['failed'], limit: 5 });
    expect(first.ids).toEqual(['i-9007', 'i-8007', 'i-7007', 'i-6007', 'i-5007']);
    expect(first.key).toBe('instances_status_created');
    expect(first.Extra ?? '').not.toMatch(/filesort/i);
    const next = await plan({ status: ['failed'], limit: 5, after: { createdAt: 1000 + 5007, id: 'i-5007' } });
    expect(next.ids).toEqual(['i-4007', 'i-3007', 'i-2007', 'i-1007', 'i-7']);
    expect(next.key).toBe('instances_status_created');
    expect(next.Extra ?? '').not.toMatch(/filesort/i);
  });

  it('reads a page of one workflow from (workflow, created_at, id), in order, without a sort', async () => {
    const first = await plan({ workflow: 'rare', limit: 3, order: 'asc' });
    expect(first.ids).toEqual(['i-7', 'i-1007', 'i-2007']);
    expect(first.key).toBe('instances_workflow_created');
    expect(first.Extra ?? '').not.toMatch(/filesort/i);
    const next = await plan({
      workflow: 'rare',
      limit: 3,
      order: 'asc',
      after: { createdAt: 1000 + 2007, id: 'i-2007' },
    });
    expect(next.ids).toEqual(['i-3007', 'i-4007', 'i-5007']);
    expect(next.key).toBe('instances_workflow_created');
  });
});
