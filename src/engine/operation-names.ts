import { markInputError } from '../errors/workflow-input-error.js';
import { WorkflowNonDeterminismError } from '../errors/workflow-non-determinism.error.js';
import type { WorkflowJournalKind } from '../storage/workflow-instance.js';

/** Who the name belongs to, for the messages below. */
interface NameOwner {
  id: string;
  workflow: string;
  version: number;
}

/**
 * The longest step, sleep, wait or child name, in characters (code points): the journal-name limit
 * every shipped store keeps, since the stores index these names. Checked at the `ctx` call, so a
 * name the store would refuse fails the call clearly instead of every write of the instance.
 */
export const MAX_OPERATION_NAME_LENGTH = 512;

/**
 * Throws a `TypeError` for a name no step, sleep, wait or child may have: an empty one, or one
 * starting with `$` (the engine's own entries) unless the engine itself (`engine`) names it, or one
 * holding a NUL character or a lone surrogate (no store keeps either); and a `RangeError` for one
 * longer than `MAX_OPERATION_NAME_LENGTH`.
 */
export function assertOperationName(name: unknown, engine: boolean): asserts name is string {
  if (typeof name !== 'string' || name.length === 0) {
    throw new TypeError(`Every step, sleep, wait and child needs a non-empty name; got ${JSON.stringify(name)}.`);
  }
  if (engine) return;
  if (name.startsWith('$')) {
    throw new TypeError(
      `Invalid name "${name}": names starting with "$" are reserved for the engine's own journal entries.`,
    );
  }
  if (name.includes('\u0000') || !(name as string & { isWellFormed(): boolean }).isWellFormed()) {
    throw markInputError(
      new TypeError(
        `The name ${JSON.stringify(name.slice(0, 40))} holds a NUL character or a lone surrogate, which no store keeps in a name. ` +
          'Use a name of well-formed text without NUL characters.',
      ),
    );
  }
  // UTF-16 length bounds the code points from above, so only long names need counting.
  if (name.length > MAX_OPERATION_NAME_LENGTH) {
    const length = [...name].length;
    if (length > MAX_OPERATION_NAME_LENGTH) {
      throw markInputError(
        new RangeError(
          `The name ${JSON.stringify(name.slice(0, 40))}... is ${length} characters long; step, sleep, wait and child names ` +
            `may have at most ${MAX_OPERATION_NAME_LENGTH} (the stores index them). Use a shorter name.`,
        ),
      );
    }
  }
}

/** One execution reached `name` twice: a replay could not tell the two calls apart. */
export function reusedNameError(owner: NameOwner, name: string): WorkflowNonDeterminismError {
  return new WorkflowNonDeterminismError(
    `Workflow "${owner.workflow}@${owner.version}" used the name "${name}" twice in instance "${owner.id}". ` +
      'Names must be unique per instance: add what tells the calls apart (an index, an id) to the name.',
  );
}

/** The code reaches `name` as another kind of operation than the journal recorded. */
export function changedKindError(
  owner: NameOwner,
  name: string,
  recorded: WorkflowJournalKind,
  reached: WorkflowJournalKind,
): WorkflowNonDeterminismError {
  return new WorkflowNonDeterminismError(
    `Instance "${owner.id}" of workflow "${owner.workflow}@${owner.version}" recorded "${name}" as a ${recorded}, ` +
      `but the code now reaches it as a ${reached}. Ship such changes as a new workflow version.`,
  );
}
