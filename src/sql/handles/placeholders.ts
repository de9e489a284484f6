/** How a store's statements number their parameters: `$1`... (PostgreSQL) or `?` (MySQL). */
export type SqlPlaceholders = 'dollar' | 'question';

/**
 * A statement cut at its parameters, for libraries that build a query from text pieces and values
 * (Drizzle's `sql`, knex's `?` bindings) instead of taking the text and a parameter array: the
 * text between parameters, and for each parameter in order of appearance the value it stands for
 * (a `$n` used twice appears twice). The store's statements hold no `$` followed by a digit and no
 * `?` other than their parameters.
 */
export function splitStatement(
  sql: string,
  params: readonly unknown[],
  placeholders: SqlPlaceholders,
): { texts: string[]; values: unknown[] } {
  const texts: string[] = [];
  const values: unknown[] = [];
  const pattern = placeholders === 'dollar' ? /\$(\d+)/g : /\?/g;
  let last = 0;
  let position = 0;
  for (const match of sql.matchAll(pattern)) {
    texts.push(sql.slice(last, match.index));
    const index = placeholders === 'dollar' ? Number(match[1]) - 1 : position++;
    if (index < 0 || index >= params.length)
      throw new RangeError(`Statement parameter ${match[0]} has no value (${params.length} given).`);
    values.push(params[index]);
    last = match.index + match[0].length;
  }
  texts.push(sql.slice(last));
  return { texts, values };
}
