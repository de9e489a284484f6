/** `2026-01-01 12:00:00.000 UTC`, or an em dash for no time. Times on the dashboard are UTC. */
export function formatTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  return `${new Date(ms).toISOString().replace('T', ' ').replace('Z', '')} UTC`;
}

/** `350 ms`, `4.2 s`, `3 min 5 s`, `2 h 10 min`, `1 h`, `3 d 4 h`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const s = Math.floor(ms / 1000);
  const two = (big: number, bigUnit: string, small: number, smallUnit: string) =>
    `${big} ${bigUnit}${small > 0 ? ` ${small} ${smallUnit}` : ''}`;
  if (s < 3600) return two(Math.floor(s / 60), 'min', s % 60, 's');
  if (s < 86_400) return two(Math.floor(s / 3600), 'h', Math.floor((s % 3600) / 60), 'min');
  return two(Math.floor(s / 86_400), 'd', Math.floor((s % 86_400) / 3600), 'h');
}

/** Most characters of a payload a page shows; the rest is cut with a note (the client API has it whole). */
export const PAYLOAD_LIMIT = 20_000;

/** A payload as indented JSON, cut at `limit` characters. */
export function formatJson(value: unknown, limit = PAYLOAD_LIMIT): string {
  let text: string;
  try {
    text = JSON.stringify(value, null, 2) ?? 'undefined';
  } catch {
    text = String(value);
  }
  return text.length > limit ? `${text.slice(0, limit)}\n… (${text.length - limit} more characters)` : text;
}

/** A one-line preview of a payload for tables. */
export function previewJson(value: unknown, limit = 80): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? '';
  } catch {
    text = String(value);
  }
  return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
}
