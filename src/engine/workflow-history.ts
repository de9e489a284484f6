import { markInputError } from '../errors/workflow-input-error.js';
import { WorkflowHistoryError } from '../errors/workflow-history.error.js';
import {
  FINISHED_STATUSES,
  PAUSED_STATUS,
  UNFINISHED_STATUSES,
  type WorkflowInstance,
  type WorkflowJournalEntry,
} from '../storage/workflow-instance.js';
import type { WorkflowInstanceDetails } from '../storage/workflow-store.js';

/** What `format` holds in every exported history. */
export const WORKFLOW_HISTORY_FORMAT = 'nest-workflows/history';

/** The version of the history layout; a reader refuses a layout newer than it knows. */
export const WORKFLOW_HISTORY_FORMAT_VERSION = 1;

/** A signal an instance's wait took, as its journal recorded it. */
export interface WorkflowHistorySignal {
  /** The wait's journal name (`ctx.waitForSignal(name, ...)`; `$`-names are the engine's, such as a child's end). */
  wait: string;
  /** The signal's name and key (`null`: sent without one). */
  name: string;
  key: string | null;
  /** The signal's id in the store (ids only grow). */
  id: number | null;
  payload: unknown;
  /** When the wait took it (epoch ms). */
  takenAt: number;
}

/**
 * One instance's history as plain JSON: the instance (without its lease), its journal in
 * first-write order and the signals its waits took, with payloads decoded by the configured codec
 * (so keep exported histories as carefully as the data itself). Made by `client.exportHistory()`
 * or `nest-workflows export-history`; read by `replayHistory()` from `@nestjs/workflows/testing`,
 * so a test can keep one as a fixture. Times are epoch milliseconds.
 */
export interface WorkflowHistory {
  format: typeof WORKFLOW_HISTORY_FORMAT;
  formatVersion: number;
  /** The version of @nestjs/workflows that exported it. */
  libraryVersion: string;
  /** When it was exported (ISO 8601). */
  exportedAt: string;
  instance: WorkflowHistoryInstance;
  journal: WorkflowJournalEntry[];
  signals: WorkflowHistorySignal[];
}

/** The instance as a history keeps it: what `getStatus()` shows, without lease and waits. */
export type WorkflowHistoryInstance = Omit<WorkflowInstance, 'leaseToken' | 'leaseOwner' | 'leaseUntil' | 'unreadable'>;

/** The history of an instance read with its journal (decoded). */
export function historyOf(details: WorkflowInstanceDetails, libraryVersion: string, now: number): WorkflowHistory {
  const {
    leaseToken: _token,
    leaseOwner: _owner,
    leaseUntil: _until,
    unreadable: _unreadable,
    waits: _waits,
    children: _children,
    journal = [],
    ...instance
  } = details;
  const signals: WorkflowHistorySignal[] = [];
  for (const entry of journal) {
    if (entry.kind !== 'signal' || entry.state !== 'completed' || !entry.signal) continue;
    signals.push({
      wait: entry.name,
      name: entry.signal.name,
      key: entry.signal.key,
      id: entry.signalId ?? null,
      payload: entry.value,
      takenAt: entry.updatedAt,
    });
  }
  return {
    format: WORKFLOW_HISTORY_FORMAT,
    formatVersion: WORKFLOW_HISTORY_FORMAT_VERSION,
    libraryVersion,
    exportedAt: new Date(now).toISOString(),
    instance,
    journal,
    signals,
  };
}

const STATUSES: readonly string[] = [...UNFINISHED_STATUSES, PAUSED_STATUS, ...FINISHED_STATUSES];
const KINDS = ['step', 'sleep', 'signal', 'child', 'value', 'compensation'];

/**
 * Checks that `value` is a history `historyOf()` made (as parsed back from its JSON), and returns
 * it typed; throws `WorkflowHistoryError` naming the first field that is wrong.
 */
export function parseHistory(value: unknown, source = 'The history'): WorkflowHistory {
  const refuse = (what: string): never => {
    throw markInputError(
      new WorkflowHistoryError(
        `${source} is not a workflow history: ${what}. Pass what client.exportHistory(id) returned ` +
          '(or a file nest-workflows export-history wrote), parsed from its JSON.',
      ),
    );
  };
  if (!isObject(value)) return refuse('not an object');
  if (value.format !== WORKFLOW_HISTORY_FORMAT) return refuse(`"format" is ${JSON.stringify(value.format)}`);
  if (typeof value.formatVersion !== 'number' || value.formatVersion > WORKFLOW_HISTORY_FORMAT_VERSION) {
    return refuse(
      `"formatVersion" ${JSON.stringify(value.formatVersion)} is not one this version reads (up to ${WORKFLOW_HISTORY_FORMAT_VERSION}); upgrade @nestjs/workflows`,
    );
  }
  const instance = value.instance;
  if (!isObject(instance)) return refuse('"instance" is not an object');
  if (typeof instance.id !== 'string' || instance.id === '') return refuse('"instance.id" is not a non-empty string');
  if (typeof instance.workflow !== 'string') return refuse('"instance.workflow" is not a string');
  if (!Number.isInteger(instance.version)) return refuse('"instance.version" is not an integer');
  if (!STATUSES.includes(instance.status as string)) return refuse('"instance.status" is not a status');
  if (!Array.isArray(value.journal)) return refuse('"journal" is not an array');
  const names = new Set<string>();
  for (const [index, entry] of (value.journal as unknown[]).entries()) {
    if (!isObject(entry) || typeof entry.name !== 'string' || entry.name === '')
      return refuse(`"journal[${index}]" has no name`);
    if (!KINDS.includes(entry.kind as string)) return refuse(`"journal[${index}].kind" is not a journal kind`);
    if (entry.state !== 'completed' && entry.state !== 'failed' && entry.state !== 'waiting')
      return refuse(`"journal[${index}].state" is not completed, failed or waiting`);
    if (names.has(entry.name)) return refuse(`"journal" holds "${entry.name}" twice`);
    names.add(entry.name);
  }
  if (!Array.isArray(value.signals)) return refuse('"signals" is not an array');
  return value as unknown as WorkflowHistory;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

declare const __PACKAGE_VERSION__: string | undefined;

/** This package's version, as builds and the test runner define it (`unknown` when run from the sources otherwise). */
export function libraryVersion(): string {
  return typeof __PACKAGE_VERSION__ === 'string' ? __PACKAGE_VERSION__ : 'unknown';
}
