/**
 * How much a stream may hold, beside the journal's limits (stream values never count in the
 * journal): `maxValueBytes` per value (its JSON text, as UTF-8, before any codec), `maxValues`
 * values and `maxBytes` of stored value text per stream (after the codec). Defaults: 256 KiB per
 * value, 10,000 values and 32 MiB per stream.
 */
export interface WorkflowStreamLimitOptions {
  maxValueBytes: number;
  maxValues: number;
  maxBytes: number;
}

/** The default stream limits (see `WorkflowStreamLimitOptions`). */
export const DEFAULT_STREAM_LIMITS: Readonly<WorkflowStreamLimitOptions> = Object.freeze({
  maxValueBytes: 256 * 1024,
  maxValues: 10_000,
  maxBytes: 32 * 1024 * 1024,
});

/** The longest stream name, in characters (the MySQL store's column is `VARCHAR(255)`). */
export const MAX_STREAM_NAME = 255;
