/**
 * The base of every error the engine throws. Each subclass has a stable `name`, so an error read
 * back from the store (where only `{ name, message }` survives) is recognised as the same kind.
 */
export class WorkflowError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}
