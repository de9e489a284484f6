/** A signal an instance waits for: its name and exactly its key (`null`: sent without one). */
export interface WorkflowWait {
  name: string;
  key: string | null;
}
