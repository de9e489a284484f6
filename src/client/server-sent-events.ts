import { Observable } from 'rxjs';
import type { WorkflowStreamItem } from './stream-reader.js';

/**
 * One server-sent event, in the shape Nest's `@Sse()` handlers return (`MessageEvent` of
 * `@nestjs/common`): `id` is the item's seq, so a browser's `EventSource` reconnects with
 * `Last-Event-ID` and the handler resumes after it (`afterLastEventId()`).
 */
export interface WorkflowServerSentEvent {
  /**
   * JSON text, whatever the value (a string value too, so the browser always `JSON.parse`s it): the
   * value; for `'discard'`, `{ step, attempt }`; `null` for `'end'`.
   */
  data: string;
  /** The seq (on `'end'`, the last seq sent, or `''` when none was: Nest would number it otherwise). */
  id: string;
  /** `'value'`, `'discard'` (a failed step attempt's values are void) or `'end'` (the stream is over). */
  type: 'value' | 'discard' | 'end';
}

/**
 * Turns `client.readStream()` into what a Nest `@Sse()` handler returns: an `Observable` of events,
 * one per item, then an `'end'` event when the stream is over (closed, or its instance ended). Listen
 * for `'end'` in the browser and call `eventSource.close()`: an `EventSource` whose connection ends
 * reconnects by itself. Unsubscribing (the client went away) stops the reader at once.
 *
 * ```ts
 * @Sse(':id/output')
 * output(@Param('id') id: string, @Headers('last-event-id') last?: string) {
 *   return toServerSentEvents(this.client.readStream(id, 'output', { after: afterLastEventId(last) }));
 * }
 * ```
 */
export function toServerSentEvents<T>(
  items: AsyncIterable<WorkflowStreamItem<T>>,
): Observable<WorkflowServerSentEvent> {
  return new Observable<WorkflowServerSentEvent>((subscriber) => {
    const iterator = items[Symbol.asyncIterator]();
    let stopped = false;
    let last = '';
    void (async () => {
      try {
        for (;;) {
          const next = await iterator.next();
          if (stopped) return;
          if (next.done) break;
          const item = next.value;
          last = String(item.seq);
          subscriber.next(
            item.discarded
              ? { id: String(item.seq), type: 'discard', data: JSON.stringify(item.discarded) }
              : { id: String(item.seq), type: 'value', data: JSON.stringify(item.value ?? null) },
          );
        }
        subscriber.next({ id: last, type: 'end', data: 'null' });
        subscriber.complete();
      } catch (error) {
        if (!stopped) subscriber.error(error);
      }
    })();
    return () => {
      stopped = true;
      void iterator.return?.();
    };
  });
}

/**
 * The `after` to resume from, given an SSE request's `Last-Event-ID` header (the seq of the last
 * event the browser got); `undefined` (from the first) when absent or not a seq.
 */
export function afterLastEventId(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || !/^\d{1,15}$/.test(value.trim())) return undefined;
  return Number(value.trim());
}
