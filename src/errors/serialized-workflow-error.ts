/** An error as it crosses the store: plain JSON, turned back into the engine's class where it owns one. */
export interface SerializedWorkflowError {
  name: string;
  message: string;
  stack?: string;
  cause?: SerializedWorkflowError;
  /** Extra fields an error carries (a child's error, a compensation's error...). */
  [field: string]: unknown;
}
