import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { WorkflowPayloadCodec } from '../codec/workflow-payload-codec.js';
import type {
  WorkflowReencryptCursor,
  WorkflowReencryptProgress,
  WorkflowReencryptResult,
} from '../storage/payload-reencryption.js';

/**
 * The codecs of `nest-workflows reencrypt --codecs <file>`: a module whose default export (or
 * `codecs` / `codec` export) is a codec, a list `[current, ...older]`, or a function returning
 * either (possibly async), so keys can come from the environment or a secrets manager.
 */
export async function loadCodecs(file: string): Promise<WorkflowPayloadCodec[]> {
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(resolve(file)).href)) as Record<string, unknown>;
  } catch (error) {
    throw new Error(
      `Could not load the codecs module ${JSON.stringify(file)}: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  let exported = module.default ?? module.codecs ?? module.codec;
  if (typeof exported === 'function' && !isCodec(exported)) exported = await (exported as () => unknown)();
  const list = Array.isArray(exported) ? exported : [exported];
  if (list.length === 0 || !list.every(isCodec)) {
    throw new Error(
      `The codecs module ${JSON.stringify(file)} must export (as default, "codecs" or "codec") a codec, a list [current, ...older], ` +
        'or a function returning one: for example `export default [new AesGcmPayloadCodec({ key: process.env.KEY_NEW, id: "2026-12" }), ...]`.',
    );
  }
  return list as WorkflowPayloadCodec[];
}

function isCodec(value: unknown): value is WorkflowPayloadCodec {
  const codec = value as Partial<WorkflowPayloadCodec> | null;
  return (
    !!codec && typeof codec === 'object' && typeof codec.encode === 'function' && typeof codec.decode === 'function'
  );
}

/** A cursor given with `--resume '<json>'`, as printed by an earlier run. */
export function parseCursor(text: string): WorkflowReencryptCursor {
  try {
    const cursor = JSON.parse(text) as WorkflowReencryptCursor;
    if (
      typeof cursor === 'object' &&
      cursor !== null &&
      typeof cursor.signal === 'number' &&
      (typeof cursor.schedule === 'string' || cursor.schedule === null)
    ) {
      return cursor;
    }
  } catch {
    // reported below
  }
  throw new TypeError(
    `--resume takes the cursor an earlier run printed, such as '{"instance":null,"signal":0,"schedule":null}'; got ${text}.`,
  );
}

/** One line of progress. */
export function describeProgress(progress: WorkflowReencryptProgress): string {
  const { read } = progress;
  return (
    `pass ${progress.pass}, ${progress.phase}: read ${read.instances} instances, ${read.signals} signals, ${read.schedules} schedules; ` +
    `rewrote ${progress.rewritten} payloads (${progress.changed} changed meanwhile, ${progress.unreadable} unreadable). ` +
    `Resume with --resume '${JSON.stringify(progress.cursor)}'`
  );
}

/** The closing line for `result`, printed with `out`; resolves to the exit code (0: nothing left under an older codec). */
export function reportResult(
  result: WorkflowReencryptResult,
  current: string,
  where: string,
  out: (line: string) => void,
): number {
  if (result.remaining === 0) {
    out(
      `Done: every payload in ${where} is under codec "${current}". The codecs after it can be removed from the list.`,
    );
    return 0;
  }
  if (result.remaining === null) {
    out(
      `Not done: it stopped before reading everything in ${where}. Run it again with --resume '${JSON.stringify(result.cursor)}'. Keep the older codecs.`,
    );
    return 1;
  }
  out(
    `Not done: ${result.remaining} payloads are not under codec "${current}" ` +
      `(${result.unreadable} could not be read by any codec in the list: add the codec that wrote them; the rest kept changing: run it again). Keep the older codecs.`,
  );
  return 1;
}
