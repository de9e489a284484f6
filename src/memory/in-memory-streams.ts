import { plainCopy } from '../storage/plain-copy.js';
import { wellFormedJson } from '../storage/well-formed-json.js';
import {
  streamValueText,
  type WorkflowStreamAppend,
  type WorkflowStreamAppendResult,
  type WorkflowStreamPage,
  type WorkflowStreamQuery,
  type WorkflowStreamRecord,
} from '../storage/workflow-store-streams.js';

interface StoredStream {
  items: WorkflowStreamRecord[];
  /** `seq` by body index: what makes a replayed body write a no-op. */
  bodySeqs: Map<number, number>;
  closed: boolean;
  values: number;
  bytes: number;
}

/**
 * The in-memory store's streams, by instance id and name. Each call is synchronous, so an append is
 * atomic on the event loop (what a SQL store's stream lock gives); the store drops an instance's
 * streams when it deletes or purges the instance.
 */
export class InMemoryStreams {
  private readonly byInstance = new Map<string, Map<string, StoredStream>>();
  private readonly listeners = new Set<(id?: string, stream?: string) => void>();

  append(append: WorkflowStreamAppend): WorkflowStreamAppendResult {
    let streams = this.byInstance.get(append.id);
    const stream = streams?.get(append.stream) ?? {
      items: [],
      bodySeqs: new Map<number, number>(),
      closed: false,
      values: 0,
      bytes: 0,
    };
    // Everything checked and copied before anything changes, so a refusal stores nothing.
    const seqs: number[] = [];
    const added: WorkflowStreamRecord[] = [];
    let values = stream.values;
    let bytes = stream.bytes;
    let next = (stream.items.at(-1)?.seq ?? 0) + 1;
    for (const item of append.items) {
      const stored = item.bodyIndex === null ? undefined : stream.bodySeqs.get(item.bodyIndex);
      if (stored !== undefined) {
        seqs.push(stored);
        continue;
      }
      if (stream.closed) return { seqs: [], refused: 'closed' };
      const { text, bytes: size } = streamValueText(item.value);
      wellFormedJson(text, `A value of stream "${append.stream}"`);
      if (item.kind === 'value') {
        values++;
        bytes += size;
        if (values > append.limits.maxValues) return { seqs: [], refused: 'values' };
        if (bytes > append.limits.maxBytes) return { seqs: [], refused: 'bytes' };
      }
      const record: WorkflowStreamRecord = {
        seq: next++,
        kind: item.kind,
        value: JSON.parse(text),
        step: item.step,
        attempt: item.attempt,
        createdAt: append.now,
      };
      added.push(record);
      seqs.push(record.seq);
      if (item.bodyIndex !== null) stream.bodySeqs.set(item.bodyIndex, record.seq);
    }
    if (!streams) this.byInstance.set(append.id, (streams = new Map()));
    streams.set(append.stream, stream);
    stream.items.push(...added);
    stream.values = values;
    stream.bytes = bytes;
    const closing = append.close && !stream.closed;
    if (closing) stream.closed = true;
    if (added.length > 0 || closing) {
      for (const listener of this.listeners) listener(append.id, append.stream);
    }
    return { seqs, refused: null };
  }

  read(query: WorkflowStreamQuery): WorkflowStreamPage {
    const stream = this.byInstance.get(query.id)?.get(query.stream);
    if (!stream) return { items: [], closed: false, lastSeq: 0 };
    // Seqs are 1, 2, ...: the item after `after` sits at index `after`.
    const start = Math.max(0, Math.min(query.after, stream.items.length));
    return {
      items: plainCopy(stream.items.slice(start, start + query.limit)),
      closed: stream.closed,
      lastSeq: stream.items.at(-1)?.seq ?? 0,
    };
  }

  listen(listener: (id?: string, stream?: string) => void): () => Promise<void> {
    // Called on a later turn, as a notification from another process would be.
    const deferred = (id?: string, stream?: string) => queueMicrotask(() => listener(id, stream));
    this.listeners.add(deferred);
    return async () => {
      this.listeners.delete(deferred);
    };
  }

  /** The instance is gone: so are its streams. */
  drop(id: string): void {
    this.byInstance.delete(id);
  }
}
