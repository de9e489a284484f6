import { lockHash, type MySqlLocks } from './mysql-locks.js';
import { retryOnLockContention } from './mysql-retry.js';
import { COMMON_GROUND, compoundTransaction, repeatedOn, type MySqlServerFeatures } from './mysql-server.js';
import { CLAIM_ORDER, dueWhere, repeated, type Statement } from './mysql-claim-conditions.js';
import { dueGroups, fairDue, fairOrder, fairPicks, type DueGroups } from './mysql-fair-claim.js';
import { CLAIM_COLUMNS, INSTANCE_COLUMNS, placeholders, type MySqlTables } from './mysql-tables.js';
import {
  claimRules,
  claimUnderLimits,
  toCandidate,
  type ClaimExclusions,
  type LimitedClaimSteps,
} from '../sql/limited-claim.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { toInstance, toNumber, type SqlRow } from '../sql/workflow-rows.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type { WorkflowClaim, WorkflowClaimRequest } from '../storage/workflow-store.js';

/** The claim's statements for the store's tables. */
function claimStatements(tables: MySqlTables) {
  const { instances, rateWindows, signals } = tables;
  /** Up to `count` due rows in claim order reading `columns`, locked, skipping locked ones and those `exclusions` names. */
  const due = (
    request: WorkflowClaimRequest,
    priorities: readonly number[],
    count: number,
    exclusions: ClaimExclusions | null,
    columns: string,
    notIds: readonly string[] = [],
  ): Statement => {
    const where = dueWhere(tables, request, exclusions, priorities);
    const params = [...where.params];
    let skip = '';
    if (notIds.length > 0) {
      skip = `\n  AND id NOT IN (${placeholders(notIds.length)})`;
      params.push(...notIds);
    }
    params.push(count);
    return {
      sql: `SELECT ${columns} FROM ${instances} FORCE INDEX (instances_due)
WHERE ${where.sql}${skip}
ORDER BY ${CLAIM_ORDER} LIMIT ? FOR UPDATE SKIP LOCKED`,
      params,
    };
  };

  /** What a lease sets on an instance row (`runs` one more, a pending or suspended instance running). */
  const leaseSet = (request: WorkflowClaimRequest): Statement => ({
    sql: `lease_token = ?, lease_owner = ?, lease_until = ?, runs = runs + 1, updated_at = ?,
  status = CASE WHEN status = 'compensating' THEN status ELSE 'running' END`,
    params: [request.token, request.owner, request.leaseUntil, request.now],
  });

  return {
    due,
    /** The lease's values, then the ids. */
    lease: (request: WorkflowClaimRequest, ids: number): Statement => {
      const lease = leaseSet(request);
      return { sql: `UPDATE ${instances} SET ${lease.sql}\nWHERE id IN (${placeholders(ids)})`, params: lease.params };
    },

    /**
     * `claim()` without limits on MariaDB, as one compound statement (see `claimInOneStatement()`):
     * the `picks` first (ids of the fair order, locked by id, passing over those another claim
     * holds or that are no longer due), then the walk of `priorities` for the room left (the picks
     * it leased have a live lease now, so the walk passes them over). Its parameters: the picks',
     * the walk's, the limit, the lease's (for each `UPDATE`), the token.
     */
    claimBlock: (request: WorkflowClaimRequest, priorities: readonly number[], picks: readonly string[]): Statement => {
      // The claim's limit, not the room left: with a variable there, MariaDB plans the walk without
      // the index's order and sorts (and locks) every due row first. The loop stops when the room is filled; rows the cursor
      // locked beyond it are released at the commit, a statement later.
      const walk = due(request, priorities, request.limit, null, 'id');
      const lease = leaseSet(request);
      const leaseOne = `UPDATE ${instances} SET ${lease.sql} WHERE id = picked;
    SET remaining = remaining - 1;`;
      const params: unknown[] = [];
      let declarePicks = '';
      let takePicks = '';
      if (picks.length > 0) {
        const where = dueWhere(tables, request, null, priorities);
        declarePicks = `DECLARE picks CURSOR FOR SELECT id FROM ${instances} WHERE id IN (${placeholders(picks.length)}) AND ${where.sql}
ORDER BY ${CLAIM_ORDER} FOR UPDATE SKIP LOCKED;
`;
        params.push(...picks, ...where.params);
        takePicks = `OPEN picks;
take: LOOP
  FETCH picks INTO picked;
  IF done THEN LEAVE take; END IF;
  ${leaseOne}
END LOOP;
CLOSE picks;
SET done = FALSE;
`;
      }
      params.push(
        ...walk.params,
        request.limit,
        ...(picks.length > 0 ? lease.params : []),
        ...lease.params,
        request.token,
      );
      const sql = compoundTransaction(
        `SET remaining = ?;
${takePicks}IF remaining > 0 THEN
  OPEN due;
  lease: LOOP
    FETCH due INTO picked;
    IF done OR remaining = 0 THEN LEAVE lease; END IF;
    ${leaseOne}
  END LOOP;
  CLOSE due;
END IF;
`,
        {
          declarations: `DECLARE done BOOL DEFAULT FALSE;
DECLARE picked VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
DECLARE remaining INT DEFAULT 0;
${declarePicks}DECLARE due CURSOR FOR ${walk.sql};
DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = TRUE;
`,
          afterCommit: `SELECT ${INSTANCE_COLUMNS}, (SELECT COALESCE(MAX(id), 0) FROM ${signals}) AS last_signal_id FROM ${instances}
WHERE lease_token = ? ORDER BY ${CLAIM_ORDER};
`,
        },
      );
      return { sql, params };
    },

    /** now, then the workflows: their leases per concurrency key, live (`lease`) or lapsed (`lapsed`). */
    leaseUsage: (workflows: number) =>
      `SELECT CASE WHEN lease_until >= ? THEN 'lease' ELSE 'lapsed' END AS kind, workflow, concurrency_key AS \`key\`, COUNT(*) AS count
FROM ${instances} WHERE workflow IN (${placeholders(workflows)}) AND lease_token IS NOT NULL
GROUP BY kind, workflow, concurrency_key`,

    /** now, then (workflow, per-key max, max) of each rule: the open windows that are full. */
    fullWindows: (rules: number) =>
      `SELECT CASE WHEN has_key = 1 THEN 'full-key' ELSE 'full' END AS kind, workflow, \`key\`, count FROM ${rateWindows}
WHERE window_end > ? AND (${Array.from({ length: rules }, () => '(workflow = ? AND count >= CASE WHEN has_key = 1 THEN ? ELSE ? END)').join(' OR ')})`,

    /** The workflows, then now: ends their leases that lapsed. */
    revokeLapsed: (workflows: number) => `UPDATE ${instances} SET lease_token = NULL, lease_until = NULL
WHERE workflow IN (${placeholders(workflows)}) AND lease_token IS NOT NULL AND lease_until < ?`,

    /** (workflow, has_key, key) of each window: inserts missing windows as ended ones and locks existing ones, in order. */
    lockWindows: (windows: number) =>
      `INSERT INTO ${rateWindows} (workflow, has_key, \`key\`, window_end, count) VALUES ${repeated('(?, ?, ?, 0, 0)', windows)}
ON DUPLICATE KEY UPDATE count = count`,

    /** (workflow, has_key, key) of each window: the windows as they are under the lock. */
    lockedWindows: (windows: number) => `SELECT workflow, has_key, \`key\`, window_end, count FROM ${rateWindows}
WHERE (workflow, has_key, \`key\`) IN (${repeated('(?, ?, ?)', windows)})`,

    /** window end, count, workflow, has_key, key. */
    writeWindow: `UPDATE ${rateWindows} SET window_end = ?, count = ? WHERE workflow = ? AND has_key = ? AND \`key\` = ?`,
  };
}

/**
 * `WorkflowStore.claim()` on MySQL, in one transaction: walks `instances_due` in claim order and
 * locks the due rows it takes with `FOR UPDATE SKIP LOCKED` (the index delivers the order, so the
 * walk stops at `limit` and locks nothing more; rows another claim holds are passed over), leases
 * them (the store reads the last signal id beside it). Under limits, the shared `claimUnderLimits()` with the
 * workflows' concurrency locks as rows of `<schema>_locks`.
 */
export class MySqlClaims {
  /** What the server offers beyond the common ground: set by the store's `init()`. */
  server: MySqlServerFeatures = COMMON_GROUND;
  private readonly sql: ReturnType<typeof claimStatements>;

  constructor(
    private readonly tables: MySqlTables,
    private readonly locks: MySqlLocks,
  ) {
    this.sql = claimStatements(tables);
  }

  /**
   * `claim()` on `executor`, retried on lock contention, with the last signal id, which may be read
   * at any time around the claim (see `MySqlSignals`): without limits on MariaDB one compound
   * statement that reads it too (`lastSignalId()` after it when it claimed nothing); else a
   * transaction of the store's own, `lastSignalId()` beside it on the pool, costing no round trip
   * of its own.
   */
  async claimOn(
    executor: SqlExecutor,
    request: WorkflowClaimRequest,
    lastSignalId: () => Promise<number>,
  ): Promise<WorkflowClaim> {
    const { limits, rates } = claimRules(request);
    const due = await dueGroups(executor, this.tables, request.now);
    // Nothing due: nothing to lock, and no transaction to open.
    if (due.priorities.length === 0) return { instances: [], lastSignalId: await lastSignalId() };
    if (this.server.oneRoundTripBatches && limits.length === 0 && rates.length === 0) {
      // One group (no concurrency keys in use): no turns to take. Else the picks are read first, unlocked.
      const fair =
        due.groups.length > 1 ? await fairPicks(executor, this.tables, request, request.limit, null, due) : null;
      const picks = fair?.picks.map((row) => String(row.id)) ?? [];
      const claimed = await retryOnLockContention(() =>
        this.claimInOneStatement(executor, request, due.priorities, picks),
      );
      if (fair) claimed.instances.sort((a, b) => fairOrder(asFairRow(a), asFairRow(b), fair.round));
      // Nothing claimed, so no row carried the last signal id: read on its own.
      return claimed.instances.length > 0 ? claimed : { instances: [], lastSignalId: await lastSignalId() };
    }
    const [claimed, last] = await Promise.all([
      retryOnLockContention(() => executor.transaction((tx) => this.claim(tx, request, due), { held: true })),
      lastSignalId(),
    ]);
    return { instances: claimed.instances, lastSignalId: last };
  }

  /** `claim()` in `tx`; `groups` as `dueGroups()` read them (read here when not given). */
  async claim(tx: SqlExecutor, request: WorkflowClaimRequest, given?: DueGroups): Promise<WorkflowClaim> {
    const { limits, rates } = claimRules(request);
    const groups = given ?? (await dueGroups(tx, this.tables, request.now));
    if (limits.length === 0 && rates.length === 0) {
      return this.due(tx, request, request.limit, null, groups).then((rows) => this.lease(tx, request, rows));
    }
    const picked = new Map<string, SqlRow>();
    const steps: LimitedClaimSteps<WorkflowClaim> = {
      lockWorkflows: (workflows) =>
        this.locks.exclusive(
          tx,
          workflows.map((workflow) => lockHash('workflow', workflow)),
        ),
      usage: async (limitWorkflows, rateRules) => {
        const rows: SqlRow[] = [];
        if (limitWorkflows.length > 0) {
          const leases = await tx.query(this.sql.leaseUsage(limitWorkflows.length), [request.now, ...limitWorkflows]);
          rows.push(...leases.rows);
        }
        if (rateRules.length > 0) {
          const full = await tx.query(this.sql.fullWindows(rateRules.length), [
            request.now,
            ...rateRules.flatMap((rule) => [rule.workflow, rule.keyMax, rule.max]),
          ]);
          rows.push(...full.rows);
        }
        return rows;
      },
      revokeLapsed: async (workflows) => {
        await tx.query(this.sql.revokeLapsed(workflows.length), [...workflows, request.now]);
      },
      candidates: async (count, exclusions) => {
        const rows = await this.due(tx, request, count, exclusions, groups);
        for (const row of rows) picked.set(String(row.id), row);
        return rows.map(toCandidate);
      },
      lockWindows: async (windows) => {
        const values = windows.flatMap((window) => [window.workflow, window.key === null ? 0 : 1, window.key ?? '']);
        await tx.query(this.sql.lockWindows(windows.length), values);
        const { rows } = await tx.query(this.sql.lockedWindows(windows.length), values);
        return rows;
      },
      lease: async (ids, windows) => {
        for (const window of windows) {
          await tx.query(this.sql.writeWindow, [
            window.windowEnd,
            window.count,
            window.workflow,
            window.key === null ? 0 : 1,
            window.key ?? '',
          ]);
        }
        return this.lease(
          tx,
          request,
          ids.map((id) => picked.get(id)!),
        );
      },
    };
    return claimUnderLimits(steps, request);
  }

  /**
   * `claim()` without limits on MariaDB (see `MySqlServerFeatures`), in one round trip: a compound
   * statement opens the transaction, locks the fair order's `picks` by id and walks the same due rows
   * for the room left, with the same `FOR UPDATE SKIP LOCKED` (cursors, which take their rows'
   * locks when they open), leases each, commits, and then
   * reads the instances it leased by their token (the claim's own: no one else holds it until the
   * lease lapses), each with the last signal id read then (0 when it claimed nothing). Any error
   * rolls everything back inside the statement.
   */
  async claimInOneStatement(
    executor: SqlExecutor,
    request: WorkflowClaimRequest,
    priorities: readonly number[],
    picks: readonly string[],
  ): Promise<WorkflowClaim> {
    const { sql, params } = this.sql.claimBlock(request, priorities, picks);
    const { rows } = await executor.query(sql, params, repeatedOn(this.server));
    return { instances: rows.map(toInstance), lastSignalId: rows.length > 0 ? toNumber(rows[0]!.last_signal_id) : 0 };
  }

  /** Up to `count` due rows in the fair order (`fairDue()`), locked, skipping locked ones and those `exclusions` names. */
  private due(
    tx: SqlExecutor,
    request: WorkflowClaimRequest,
    count: number,
    exclusions: ClaimExclusions | null,
    groups: DueGroups,
  ): Promise<SqlRow[]> {
    return fairDue(tx, this.tables, request, count, exclusions, CLAIM_COLUMNS, groups, async (room, notIds) => {
      const { sql, params } = this.sql.due(request, groups.priorities, room, exclusions, CLAIM_COLUMNS, notIds);
      return (await tx.query(sql, params)).rows;
    });
  }

  /**
   * Leases the locked `rows` (in claim order; `CLAIM_COLUMNS`, without what the lease sets) and
   * returns them as updated (the store adds the last signal id).
   */
  private async lease(tx: SqlExecutor, request: WorkflowClaimRequest, rows: SqlRow[]): Promise<WorkflowClaim> {
    const instances: WorkflowInstance[] = [];
    if (rows.length > 0) {
      const lease = this.sql.lease(request, rows.length);
      await tx.query(lease.sql, [...lease.params, ...rows.map((row) => row.id)]);
      for (const row of rows) {
        const instance = toInstance(row);
        instances.push({
          ...instance,
          leaseToken: request.token,
          leaseOwner: request.owner,
          leaseUntil: request.leaseUntil,
          runs: instance.runs + 1,
          updatedAt: request.now,
          status: instance.status === 'compensating' ? 'compensating' : 'running',
        });
      }
    }
    return { instances, lastSignalId: 0 };
  }
}

/** What `fairOrder()` reads of a claimed instance. */
function asFairRow(instance: WorkflowInstance): SqlRow {
  return { id: instance.id, priority: instance.priority, wake_at: instance.wakeAt, created_at: instance.createdAt };
}
