import type { InMemorySignalLog } from './in-memory-signal-log.js';
import {
  UNTAKEN_SIGNALS_SCANNED,
  type WorkflowUntakenSignal,
  type WorkflowUntakenSignalQuery,
} from '../storage/workflow-store-signals.js';

/**
 * `untakenSignals()` of the in-memory store: the newest signals whose id no journal entry of
 * `journals` (each instance's entries as JSON text) records as the signal it took.
 */
export function untakenSignals(
  log: InMemorySignalLog,
  journals: Iterable<Iterable<string>>,
  query: WorkflowUntakenSignalQuery,
): WorkflowUntakenSignal[] {
  const taken = new Set<number>();
  for (const journal of journals) {
    for (const text of journal) {
      // Most entries took no signal: parse only those that name one.
      if (!text.includes('"signalId"')) continue;
      const { signalId } = JSON.parse(text) as { signalId?: unknown };
      if (typeof signalId === 'number') taken.add(signalId);
    }
  }
  const out: WorkflowUntakenSignal[] = [];
  for (const record of log.newest(UNTAKEN_SIGNALS_SCANNED)) {
    if (out.length >= query.limit) break;
    if (record.name.startsWith('$') || taken.has(record.id)) continue;
    out.push({ id: record.id, name: record.name, key: record.key, createdAt: record.createdAt });
  }
  return out;
}
