/** What the fair order reads of a due instance. */
export interface FairCandidate {
  id: string;
  priority: number;
  wakeAt: number;
  createdAt: number;
}

/** The most concurrency keys of one priority a claim takes turns between. */
export const FAIR_KEYS_PER_PRIORITY = 1000;

/**
 * How many due instances a claim of `count` reads from each of `groups` groups (a priority's
 * concurrency key, or its instances without one): its share, rounded up.
 */
export function fairShare(count: number, groups: number): number {
  return Math.max(1, Math.ceil(count / Math.max(1, groups)));
}

/**
 * The first `count` of a claim in the fair order: priority first, then the round (each group's
 * instances read in claim order, its oldest in round 1 plus one for each instance of the group
 * running now), then claim order (`wakeAt`, `createdAt`, id). `rounds` holds each group's share,
 * `plain` the first `count` due instances in claim order; those of `plain` not in a round come after
 * every round of their priority. Because `plain` holds the first `count` in claim order, no instance
 * of a later priority is taken while one of an earlier priority is left.
 */
export function fairOrder<T extends FairCandidate>(
  rounds: ReadonlyArray<T & { round: number }>,
  plain: readonly T[],
  count: number,
): T[] {
  const ranked = new Map<string, { candidate: T; round: number }>();
  for (const candidate of rounds) ranked.set(candidate.id, { candidate, round: candidate.round });
  for (const candidate of plain)
    if (!ranked.has(candidate.id)) ranked.set(candidate.id, { candidate, round: Infinity });
  return [...ranked.values()]
    .sort(
      (a, b) =>
        a.candidate.priority - b.candidate.priority ||
        a.round - b.round ||
        a.candidate.wakeAt - b.candidate.wakeAt ||
        a.candidate.createdAt - b.candidate.createdAt ||
        (a.candidate.id < b.candidate.id ? -1 : a.candidate.id > b.candidate.id ? 1 : 0),
    )
    .slice(0, count)
    .map(({ candidate }) => candidate);
}
