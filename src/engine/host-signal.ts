import type { OperationControl } from './execution-host.js';

/** Where an object keeps the host its `signal` reads: a non-enumerable symbol, which spreads, keys and JSON leave out. */
const HOST = Symbol('@nestjs/workflows:signal-host');

type SignalHost = Pick<OperationControl, 'abortSignal'>;

/** The one getter of every `ctx.signal` and step `run.signal`: its host's signal, made when first read. */
function hostSignal(this: { [HOST]: SignalHost }): AbortSignal {
  return this[HOST].abortSignal;
}

const SIGNAL: PropertyDescriptor = { get: hostSignal, enumerable: true, configurable: true };

/**
 * Gives `target` the `signal` property an object literal's `get signal() { return host.abortSignal }`
 * would (own, enumerable, read when asked, so the signal is made only if something reads it), with
 * one getter for every object instead of a closure each. An object whose accessor is a function of
 * its own (each evaluation of a literal's getter makes one) leaves V8's shared hidden classes, and
 * such objects stayed reachable from the old generation until a full collection (Node 20): every
 * young-generation collection promoted them with all they reference, here the whole execution
 * (bench/RESULTS.md, "the first drain() and the old generation"). With one getter they keep a
 * shared hidden class and die young.
 */
export function withHostSignal<T extends object>(target: T, host: SignalHost): T & { readonly signal: AbortSignal } {
  Object.defineProperty(target, HOST, { value: host });
  return Object.defineProperty(target, 'signal', SIGNAL) as T & { readonly signal: AbortSignal };
}
