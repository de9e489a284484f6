import type { PayloadCodecChain } from '../codec/payload-codec-chain.js';
import { WorkflowPayloadError } from '../errors/workflow-payload.error.js';
import { decodeError, encodeError } from './error-encoding.js';
import type { WorkflowInstance, WorkflowJournalEntry, WorkflowUnreadablePayloads } from './workflow-instance.js';
import type {
  NewWorkflowInstance,
  NewWorkflowSignal,
  WorkflowInstanceDetails,
  WorkflowReopen,
  WorkflowScheduleRecord,
  WorkflowScheduleSave,
  WorkflowSignalRecord,
  WorkflowWrite,
} from './workflow-store.js';

type Decode = (stored: unknown, field: string) => Promise<unknown>;

/**
 * Which fields of what the engine stores are payloads, and their encoding with the codec chain:
 * inputs, outputs, custom statuses, cancel reasons, journal values, signal payloads, schedule
 * inputs and errors (field by field, see error-encoding.ts). Everything else (ids, names, keys,
 * statuses, times, the engine's bookkeeping) is left as it is: the store indexes and compares it.
 */
export class PayloadEncoding {
  /** Entries encoded ahead of their write (`prepare()`): the write reuses them, so nothing is encoded twice. */
  private readonly prepared = new WeakMap<WorkflowJournalEntry, WorkflowJournalEntry>();

  constructor(readonly chain: PayloadCodecChain) {}

  /**
   * Encodes `entry` now, ahead of the write that carries it, so that a value the codec refuses (too
   * large for a KMS, say) fails the operation that produced it instead of that write; the write
   * then reuses what was encoded here.
   */
  async prepare(entry: WorkflowJournalEntry): Promise<void> {
    this.prepared.set(entry, await this.entry(entry));
  }

  /** Outputs encoded ahead of their write (`prepareOutput()`), by the value's object: the write reuses them. */
  private readonly preparedOutputs = new WeakMap<object, unknown>();

  /**
   * Encodes an output now, ahead of the write that carries it (see `prepare()`). An object's encoding
   * is kept for that write; a number or a string is small enough to encode again.
   */
  async prepareOutput(value: unknown): Promise<void> {
    const encoded = await this.chain.encode(value);
    if (typeof value === 'object' && value !== null) this.preparedOutputs.set(value, encoded);
  }

  async newInstance(instance: NewWorkflowInstance): Promise<NewWorkflowInstance> {
    return { ...instance, input: await this.chain.encode(instance.input) };
  }

  async write(write: WorkflowWrite): Promise<WorkflowWrite> {
    const out: WorkflowWrite = { ...write, entries: await this.entries(write.entries) };
    if (write.output !== undefined) out.output = await this.output(write.output);
    if (write.error !== undefined) out.error = await encodeError(this.chain, write.error);
    if (write.customStatus !== undefined) out.customStatus = await this.chain.encode(write.customStatus);
    if (write.signal) out.signal = await this.signal(write.signal);
    return out;
  }

  async reopen(reopen: WorkflowReopen): Promise<WorkflowReopen> {
    return {
      ...reopen,
      error: (await encodeError(this.chain, reopen.error)) ?? null,
      entries: await this.entries(reopen.entries),
    };
  }

  async signal(signal: NewWorkflowSignal): Promise<NewWorkflowSignal> {
    return { ...signal, payload: await this.chain.encode(signal.payload) };
  }

  reason(reason: string | null): Promise<string | null> {
    return this.chain.encodeText(reason);
  }

  /** A stored reason (a workflow's pause) decoded for readers: `null` when no configured codec can read it. */
  async readableReason(stored: string | null): Promise<string | null> {
    if (stored === null) return null;
    try {
      return ((await this.chain.decode(stored)) as string | null) ?? null;
    } catch {
      return null;
    }
  }

  async scheduleSave(schedule: WorkflowScheduleSave): Promise<WorkflowScheduleSave> {
    return { ...schedule, input: await this.chain.encode(schedule.input) };
  }

  entries(entries: WorkflowJournalEntry[]): Promise<WorkflowJournalEntry[]> {
    return entries.length === 0 ? Promise.resolve(entries) : Promise.all(entries.map((entry) => this.entry(entry)));
  }

  private output(value: unknown): Promise<unknown> {
    const prepared = typeof value === 'object' && value !== null ? this.preparedOutputs.get(value) : undefined;
    return prepared !== undefined ? Promise.resolve(prepared) : this.chain.encode(value);
  }

  async entry(entry: WorkflowJournalEntry): Promise<WorkflowJournalEntry> {
    const prepared = this.prepared.get(entry);
    if (prepared !== undefined) return prepared;
    if (entry.value === undefined && (entry.error === undefined || entry.error === null)) return entry;
    const out = { ...entry };
    if (entry.value !== undefined) out.value = await this.chain.encode(entry.value);
    if (entry.error !== undefined && entry.error !== null) out.error = await encodeError(this.chain, entry.error);
    return out;
  }

  /** A create's result: the new instance with the input as given, or the existing one decoded. */
  async created(
    given: NewWorkflowInstance,
    result: { instance: WorkflowInstance; created: boolean },
  ): Promise<{ instance: WorkflowInstance; created: boolean }> {
    const instance = result.created ? { ...result.instance, input: given.input } : await this.instance(result.instance);
    return { instance, created: result.created };
  }

  /** Decodes an instance for the engine: throws `WorkflowPayloadError` when a payload can't be read. */
  instance<T extends WorkflowInstance>(instance: T): Promise<T> {
    return this.decodeInstance(instance, this.strict);
  }

  /** Decodes an instance with its waits, journal and children for the engine (throws, as `instance`). */
  async details(details: WorkflowInstanceDetails): Promise<WorkflowInstanceDetails> {
    return this.decodeDetails(details, this.strict);
  }

  /**
   * Decodes for a reader (`getStatus()`, `list()`): a payload no configured codec can read is left
   * out (`undefined`) and listed in `unreadable` with the reason, instead of failing the read.
   */
  async readable<T extends WorkflowInstance | WorkflowInstanceDetails>(instance: T): Promise<T> {
    const failures: Array<{ field: string; error: WorkflowPayloadError }> = [];
    const lenient: Decode = async (stored, field) => {
      try {
        return await this.chain.decode(stored);
      } catch (error) {
        if (!(error instanceof WorkflowPayloadError)) throw error;
        failures.push({ field, error });
        return undefined;
      }
    };
    const out =
      'waits' in instance ? await this.decodeDetails(instance, lenient) : await this.decodeInstance(instance, lenient);
    if (failures.length > 0) {
      const unreadable: WorkflowUnreadablePayloads = {
        reason: failures[0]!.error.message,
        codecIds: [...new Set(failures.map((f) => f.error.codecId))],
        fields: failures.map((f) => f.field),
      };
      out.unreadable = unreadable;
    }
    return out as T;
  }

  async signalRecord(record: WorkflowSignalRecord): Promise<WorkflowSignalRecord> {
    return { ...record, payload: await this.chain.decode(record.payload) };
  }

  async schedule(record: WorkflowScheduleRecord): Promise<WorkflowScheduleRecord> {
    return { ...record, input: await this.chain.decode(record.input) };
  }

  /** A schedule for a reader that copes: an input no codec can read is `undefined`, with `unreadable` saying why. */
  async readableSchedule(record: WorkflowScheduleRecord): Promise<WorkflowScheduleRecord> {
    try {
      return await this.schedule(record);
    } catch (error) {
      if (!(error instanceof WorkflowPayloadError)) throw error;
      return {
        ...record,
        input: undefined,
        unreadable: { reason: error.message, codecIds: [error.codecId], fields: ['input'] },
      };
    }
  }

  private readonly strict: Decode = (stored) => this.chain.decode(stored);

  private async decodeInstance<T extends WorkflowInstance>(instance: T, decode: Decode): Promise<T> {
    return {
      ...instance,
      input: await decode(instance.input, 'input'),
      output: await decode(instance.output, 'output'),
      error: (await decodeError(decode, instance.error, 'error')) ?? null,
      customStatus: await decode(instance.customStatus, 'customStatus'),
      cancelReason:
        instance.cancelReason === null
          ? null
          : (((await decode(instance.cancelReason, 'cancelReason')) as string | undefined) ?? null),
      ...(instance.pauseReason === undefined || instance.pauseReason === null
        ? {}
        : { pauseReason: ((await decode(instance.pauseReason, 'pauseReason')) as string | undefined) ?? null }),
    };
  }

  private async decodeDetails(details: WorkflowInstanceDetails, decode: Decode): Promise<WorkflowInstanceDetails> {
    const out = await this.decodeInstance(details, decode);
    if (details.journal)
      out.journal = await Promise.all(details.journal.map((entry) => this.decodeEntry(entry, decode)));
    if (details.children)
      out.children = await Promise.all(details.children.map((child) => this.decodeInstance(child, decode)));
    return out;
  }

  private async decodeEntry(entry: WorkflowJournalEntry, decode: Decode): Promise<WorkflowJournalEntry> {
    if (entry.value === undefined && (entry.error === undefined || entry.error === null)) return entry;
    const out = { ...entry };
    const field = `journal.${entry.name}`;
    if (entry.value !== undefined) out.value = await decode(entry.value, `${field}.value`);
    if (entry.error !== undefined && entry.error !== null)
      out.error = await decodeError(decode, entry.error, `${field}.error`);
    return out;
  }
}
