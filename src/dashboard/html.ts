/**
 * HTML that is already safe to put in a page: markup this module wrote, with every value inside it
 * escaped. Only `html` and `trustedHtml` make one, so a value can't reach a page unescaped by
 * accident: anything else interpolated into `html` is escaped.
 */
export class SafeHtml {
  /** @internal Use `html` or `trustedHtml`. */
  constructor(readonly value: string) {}

  toString(): string {
    return this.value;
  }
}

/** A value that may go into `html`: escaped unless it is `SafeHtml`; arrays are joined; null, undefined and false render nothing. */
export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | readonly HtmlValue[];

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for an element's content or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

/**
 * The template tag for every page: `html\`<td>${instance.id}</td>\`` escapes the id. Payloads are
 * user data, so nothing reaches the page except through here.
 */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i += 1) out += render(values[i]!) + strings[i + 1]!;
  return new SafeHtml(out);
}

/** Markup written by this module itself (never built from a request or a payload). */
export function trustedHtml(markup: string): SafeHtml {
  return new SafeHtml(markup);
}
