import { WorkflowNonDeterminismError } from '../errors/workflow-non-determinism.error.js';
import { WorkflowPatchError } from '../errors/workflow-patch.error.js';
import { markInputError } from '../errors/workflow-input-error.js';
import type { WorkflowJournalEntry } from '../storage/workflow-instance.js';
import type { OperationHost } from './execution-host.js';
import { MAX_OPERATION_NAME_LENGTH } from './operation-names.js';

/**
 * Journal names of patch markers start with this. A marker is never reported as an entry the code
 * no longer reaches: the release that removes a patch leaves its markers behind, and that is safe.
 */
export const PATCH_MARKER_PREFIX = '$patch:';

/** Whether a journal name is a patch marker. */
export function isPatchMarker(name: string): boolean {
  return name.startsWith(PATCH_MARKER_PREFIX);
}

/**
 * `ctx.patched()` and `ctx.deprecatePatch()` for one execution. The first time an instance reaches a
 * patch its answer is journaled as a marker (`$patch:<id>`, a value entry holding `true` or
 * `false`), so every later replay gives the same answer whatever the journal grows into. That first
 * answer is `false` when the journal already holds entries this replay has not reached: the
 * instance went past this point on code without the patch. Otherwise it is `true`.
 */
export class PatchMarkers {
  /** Answers given in this execution, by marker name (a patch may be asked about in several places). */
  private answers: Map<string, boolean> | null = null;

  constructor(private readonly host: OperationHost) {}

  patched(patchId: unknown): boolean {
    const name = this.markerName(patchId, 'patched');
    const known = this.answers?.get(name);
    if (known !== undefined) return known;
    const entry = this.host.journalEntry(name);
    const answer = entry ? entry.value === true : !this.host.journalAhead();
    if (!entry) this.recordMarker(name, answer);
    (this.answers ??= new Map()).set(name, answer);
    return answer;
  }

  deprecatePatch(patchId: unknown): void {
    const name = this.markerName(patchId, 'deprecatePatch');
    const known = this.answers?.get(name);
    if (known === true) return;
    const entry = this.host.journalEntry(name);
    if (known === false || (entry ? entry.value !== true : this.host.journalAhead())) {
      const { instance } = this.host;
      throw this.host.diverged(
        new WorkflowNonDeterminismError(
          `Instance "${instance.id}" of workflow "${instance.workflow}@${instance.version}" went past patch "${String(patchId)}" ` +
            'on code without the patch, and this code only keeps the patched branch (ctx.deprecatePatch()). ' +
            'Keep ctx.patched() until every instance that started before the patch has finished ' +
            '(replayStored() from @nestjs/workflows/testing lists them), then deprecate it.',
        ),
      );
    }
    if (!entry) this.recordMarker(name, true);
    (this.answers ??= new Map()).set(name, true);
  }

  private recordMarker(name: string, value: boolean): void {
    // Compensating or cancelled: nothing new is recorded, and the answer only steers code that parks.
    if (this.host.replayOnly) return;
    const at = this.host.now();
    const entry: WorkflowJournalEntry = {
      name,
      kind: 'value',
      state: 'completed',
      value,
      createdAt: at,
      updatedAt: at,
    };
    this.host.record(entry);
  }

  private markerName(patchId: unknown, call: 'patched' | 'deprecatePatch'): string {
    const { host } = this;
    host.throwIfStopped();
    if (typeof patchId !== 'string' || patchId.length === 0) {
      throw markInputError(
        new WorkflowPatchError(
          `ctx.${call}() needs a non-empty string patch id; got ${JSON.stringify(patchId) ?? String(patchId)}. ` +
            'Name the change, for example ctx.patched("charge-in-cents").',
        ),
      );
    }
    const name = PATCH_MARKER_PREFIX + patchId;
    if ([...name].length > MAX_OPERATION_NAME_LENGTH || patchId.includes('\u0000')) {
      throw markInputError(
        new WorkflowPatchError(
          `The patch id ${JSON.stringify(patchId.slice(0, 40))} is too long or holds a NUL character; ` +
            `patch ids may have at most ${MAX_OPERATION_NAME_LENGTH - PATCH_MARKER_PREFIX.length} characters. Use a shorter id.`,
        ),
      );
    }
    if (host.callingStep !== null) {
      throw new WorkflowPatchError(
        `ctx.${call}("${patchId}") was called inside step "${host.callingStep}" of instance "${host.instance.id}" ` +
          `(workflow "${host.instance.workflow}@${host.instance.version}"). A step's function never replays, so change ` +
          `its code directly; call ctx.${call}() in run(), around the steps whose order or names change.`,
      );
    }
    return name;
  }
}
