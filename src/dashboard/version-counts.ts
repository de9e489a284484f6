import type { WorkflowClient } from '../client/workflow-client.js';
import { PAUSED_STATUS, UNFINISHED_STATUSES } from '../storage/workflow-instance.js';
import type { VersionRow } from './versions-page.js';

const PAGE = 1000;

/**
 * Unfinished instances counted by workflow and version (`workflow@version` keys), reading `list()`
 * pages of the client up to `cap` instances: no store counts by version, and a page of ids costs
 * what the list page does. `capped`: there were more.
 */
export async function countUnfinishedByVersion(
  client: WorkflowClient,
  cap: number,
): Promise<{ counts: Map<string, { workflow: string; version: number; unfinished: number }>; capped: boolean }> {
  const counts = new Map<string, { workflow: string; version: number; unfinished: number }>();
  let seen = 0;
  for (let offset = 0; seen < cap; offset += PAGE) {
    const page = await client.list({ status: [...UNFINISHED_STATUSES, PAUSED_STATUS], limit: PAGE, offset });
    for (const instance of page) {
      const key = `${instance.workflow}@${instance.version}`;
      const row = counts.get(key) ?? { workflow: instance.workflow, version: instance.version, unfinished: 0 };
      row.unfinished++;
      counts.set(key, row);
    }
    seen += page.length;
    if (page.length < PAGE) return { counts, capped: false };
  }
  return { counts, capped: true };
}

/** The counted versions and the declared ones as one list: by workflow name, newest version first. */
export function versionRows(
  counts: ReadonlyMap<string, { workflow: string; version: number; unfinished: number }>,
  declared: ReadonlyArray<{ name: string; version: number }>,
): VersionRow[] {
  const rows = new Map<string, VersionRow>();
  for (const [key, count] of counts) rows.set(key, { ...count, declaredHere: false });
  for (const { name, version } of declared) {
    const key = `${name}@${version}`;
    const row = rows.get(key);
    if (row) row.declaredHere = true;
    else rows.set(key, { workflow: name, version, unfinished: 0, declaredHere: true });
  }
  return [...rows.values()].sort((a, b) =>
    a.workflow === b.workflow ? b.version - a.version : a.workflow < b.workflow ? -1 : 1,
  );
}
