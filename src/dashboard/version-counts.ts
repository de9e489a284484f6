import type { WorkflowClient } from '../client/workflow-client.js';
import { PAUSED_STATUS, UNFINISHED_STATUSES } from '../storage/workflow-instance.js';
import type { WorkflowProcessRecord } from '../storage/workflow-store-processes.js';
import type { VersionRow } from './versions-page.js';

const PAGE = 1000;

/** `declaredBy` without process records: this process declares the version. */
export const HERE = 'this process';

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

/** Who declares the versions: the live processes' records, or (`null`: a store that keeps none) this process's registry. */
export type VersionDeclarations =
  | { processes: ReadonlyArray<WorkflowProcessRecord>; here?: undefined }
  | { processes: null; here: ReadonlyArray<{ name: string; version: number }> };

/**
 * The counted versions and the declared ones as one list, by workflow name, newest version first:
 * each with the live processes that declare it (by worker id), or, without process records, whether
 * this process does.
 */
export function versionRows(
  counts: ReadonlyMap<string, { workflow: string; version: number; unfinished: number }>,
  declarations: VersionDeclarations,
): VersionRow[] {
  const rows = new Map<string, VersionRow>();
  const row = (workflow: string, version: number): VersionRow => {
    const key = `${workflow}@${version}`;
    let found = rows.get(key);
    if (!found) rows.set(key, (found = { workflow, version, unfinished: 0, declaredBy: [] }));
    return found;
  };
  for (const count of counts.values()) row(count.workflow, count.version).unfinished = count.unfinished;
  if (declarations.processes === null) {
    for (const { name, version } of declarations.here) row(name, version).declaredBy.push(HERE);
  } else {
    for (const process of declarations.processes)
      for (const { workflow, version } of process.declared) row(workflow, version).declaredBy.push(process.owner);
  }
  return [...rows.values()].sort((a, b) =>
    a.workflow === b.workflow ? b.version - a.version : a.workflow < b.workflow ? -1 : 1,
  );
}
