import type { ExecutionStreams } from './execution-streams.js';
import type { WorkflowStream } from './workflow-context.js';

/** Where a step's run object keeps what its `stream` reads: a non-enumerable symbol, as `withHostSignal()` does. */
const STREAMS = Symbol('@nestjs/workflows:step-streams');

interface StepStreams {
  streams: ExecutionStreams;
  step: string;
  attempt: number;
}

type StreamOpener = <T = unknown>(name: string) => WorkflowStream<T>;

/** The one getter of every step's `run.stream`: a function bound to its attempt, made when read (so `fn({ stream })` works). */
function stepStream(this: { [STREAMS]: StepStreams }): StreamOpener {
  const { streams, step, attempt } = this[STREAMS];
  return <T>(name: string) => streams.step<T>(step, attempt, name);
}

const STREAM: PropertyDescriptor = { get: stepStream, enumerable: true, configurable: true };

/**
 * Gives a step's run object its `stream` (`run.stream(name)` writes live, tagged with the step and
 * attempt), with one shared getter so an attempt that never streams makes nothing.
 */
export function withStepStream<T extends object>(
  target: T,
  streams: ExecutionStreams,
  step: string,
  attempt: number,
): T & { readonly stream: StreamOpener } {
  Object.defineProperty(target, STREAMS, { value: { streams, step, attempt } });
  return Object.defineProperty(target, 'stream', STREAM) as T & { readonly stream: StreamOpener };
}
