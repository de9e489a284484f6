import { markInputError } from '../errors/workflow-input-error.js';
import { Cron } from 'croner';
import { parseDuration, type Duration } from '../time/duration.js';

/** What a schedule does when an occurrence comes while an instance it started earlier is unfinished. */
export type WorkflowScheduleOverlap = 'skip' | 'allow' | 'cancel-previous';

/** Which missed occurrences (no process got to them in time) start an instance late. */
export type WorkflowScheduleCatchup = 'latest' | 'all' | 'none';

/** The cadence and rules of a schedule, as `@Workflow({ schedules })` and `WorkflowSchedules.upsert()` take them. */
export interface WorkflowScheduleRules {
  /**
   * A cron expression: five fields (minute hour day-of-month month day-of-week) or six with
   * seconds first, read in `timezone`. Give `cron` or `every`.
   */
  cron?: string;
  /** A fixed interval; occurrences fall on whole multiples of it since the Unix epoch (`'1m'`: whole minutes). */
  every?: Duration;
  /** The IANA time zone `cron` is read in, such as `'Europe/Paris'`. Default UTC. Only with `cron`. */
  timezone?: string;
  /** Default `'skip'`: no new instance while one this schedule started is unfinished. */
  overlap?: WorkflowScheduleOverlap;
  /** Default `'latest'`: of the missed occurrences, start only the most recent one. */
  catchup?: WorkflowScheduleCatchup;
  /** With `catchup: 'all'`: how far back missed occurrences still start. Default `'1d'`. */
  catchupWindow?: Duration;
}

/** The rules, validated and with their defaults: what the store keeps as a schedule's `spec`. */
export interface ScheduleSpec {
  cron: string | null;
  /** Milliseconds. */
  every: number | null;
  /** `null`: UTC. */
  timezone: string | null;
  overlap: WorkflowScheduleOverlap;
  catchup: WorkflowScheduleCatchup;
  /** Milliseconds. */
  catchupWindow: number;
  /** The `paused` a declared schedule had in code (`null` for one created at run time). */
  declaredPaused: boolean | null;
}

const OVERLAPS: readonly WorkflowScheduleOverlap[] = ['skip', 'allow', 'cancel-previous'];
const CATCHUPS: readonly WorkflowScheduleCatchup[] = ['latest', 'all', 'none'];
const DEFAULT_CATCHUP_WINDOW = 86_400_000;

/**
 * Validates a schedule's rules and applies the defaults. Throws a `TypeError` that starts with
 * `where` (the schedule it is about) and quotes the value that is wrong: a cron expression croner
 * refuses or that never occurs, an unknown time zone, a zero interval.
 */
export function resolveScheduleSpec(
  rules: WorkflowScheduleRules,
  where: string,
  declaredPaused: boolean | null = null,
): ScheduleSpec {
  if (!rules || typeof rules !== 'object')
    throw markInputError(new TypeError(`${where} must be an object such as { cron: '0 * * * *' } or { every: '1m' }.`));
  if ((rules.cron === undefined) === (rules.every === undefined)) {
    throw markInputError(
      new TypeError(`${where} needs exactly one of cron (such as '0 * * * *') or every (such as '1m').`),
    );
  }
  let timezone: string | null = null;
  if (rules.timezone !== undefined) {
    if (rules.cron === undefined) {
      throw markInputError(
        new TypeError(
          `${where}: timezone ${quote(rules.timezone)} applies to cron only; every counts from the Unix epoch. Remove it.`,
        ),
      );
    }
    timezone = checkTimezone(rules.timezone, where);
  }
  let every: number | null = null;
  if (rules.every !== undefined) {
    every = parseDuration(rules.every, `every of ${where}`);
    if (every < 1_000 || every % 1_000 !== 0) {
      throw markInputError(
        new TypeError(`${where}: every ${quote(rules.every)} must be a whole number of seconds, at least '1s'.`),
      );
    }
  }
  const cron = rules.cron === undefined ? null : checkCron(rules.cron, timezone, where);
  const overlap = rules.overlap ?? 'skip';
  if (!OVERLAPS.includes(overlap))
    throw markInputError(
      new TypeError(`${where}: invalid overlap ${quote(overlap)}. Use ${OVERLAPS.map(quote).join(', ')}.`),
    );
  const catchup = rules.catchup ?? 'latest';
  if (!CATCHUPS.includes(catchup))
    throw markInputError(
      new TypeError(`${where}: invalid catchup ${quote(catchup)}. Use ${CATCHUPS.map(quote).join(', ')}.`),
    );
  const catchupWindow =
    rules.catchupWindow === undefined
      ? DEFAULT_CATCHUP_WINDOW
      : parseDuration(rules.catchupWindow, `catchupWindow of ${where}`);
  return { cron, every, timezone, overlap, catchup, catchupWindow, declaredPaused };
}

/**
 * A spec as read back from the store, checked again: a row written by hand or by another version
 * of this library must not crash the scheduler. Throws a `TypeError` naming the schedule.
 */
export function readScheduleSpec(stored: unknown, scheduleId: string): ScheduleSpec {
  const spec = (stored ?? {}) as Partial<ScheduleSpec>;
  const where = `Schedule "${scheduleId}" as stored`;
  const resolved = resolveScheduleSpec(
    {
      cron: spec.cron ?? undefined,
      every: spec.every ?? undefined,
      timezone: spec.timezone ?? undefined,
      overlap: spec.overlap,
      catchup: spec.catchup,
      catchupWindow: spec.catchupWindow,
    },
    where,
    typeof spec.declaredPaused === 'boolean' ? spec.declaredPaused : null,
  );
  return resolved;
}

/** Whether two specs give the same occurrences (cron, every and time zone alike). */
export function sameCadence(a: ScheduleSpec, b: ScheduleSpec): boolean {
  return a.cron === b.cron && a.every === b.every && a.timezone === b.timezone;
}

/** croner's options for a spec: five or six fields, the time zone, nothing scheduled by croner itself. */
export function cronerOptions(timezone: string | null): ConstructorParameters<typeof Cron>[1] {
  return { mode: '5-or-6-parts', paused: true, ...(timezone === null ? {} : { timezone }) };
}

function checkTimezone(timezone: unknown, where: string): string {
  if (typeof timezone !== 'string' || timezone.trim() === '') {
    throw markInputError(
      new TypeError(`${where}: invalid timezone ${quote(timezone)}. Use an IANA name such as 'Europe/Paris'.`),
    );
  }
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone }).format(0);
  } catch {
    throw markInputError(
      new TypeError(
        `${where}: unknown timezone ${quote(timezone)}. Use an IANA name such as 'Europe/Paris' or 'America/New_York'.`,
      ),
    );
  }
  return timezone;
}

function checkCron(cron: unknown, timezone: string | null, where: string): string {
  if (typeof cron !== 'string' || cron.trim() === '') {
    throw markInputError(
      new TypeError(
        `${where}: invalid cron ${quote(cron)}. Use five fields or six with seconds first, such as '0 9 * * 1-5'.`,
      ),
    );
  }
  const expression = cron.trim().replace(/\s+/g, ' ');
  let first: Date | null;
  try {
    first = new Cron(expression, cronerOptions(timezone)).nextRun(new Date(0));
  } catch (error) {
    const reason = error instanceof Error ? error.message.replace(/^CronPattern: /, '') : String(error);
    throw markInputError(
      new TypeError(
        `${where}: invalid cron ${quote(cron)} (${reason}). Use five fields (minute hour day-of-month month day-of-week) ` +
          "or six with seconds first, such as '0 9 * * 1-5' or '*/10 * * * * *'.",
        { cause: error },
      ),
    );
  }
  if (first === null)
    throw markInputError(
      new TypeError(
        `${where}: cron ${quote(cron)} never occurs (such as February 30). Check its day and month fields.`,
      ),
    );
  return expression;
}

function quote(value: unknown): string {
  return typeof value === 'string' ? `'${value}'` : String(value);
}
