import { isDatabaseUnavailable } from './errors.ts';

export interface GroupCommitOptions {
  /** The most items one write takes. */
  maxItems: number;
  /** The most writes running at once; items arriving meanwhile wait for the next one. */
  maxInFlight: number;
}

interface Waiting<I, O> {
  item: I;
  resolve: (output: O) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: concurrent callers' writes go to the database together. An item submitted while
 * the writes in flight are at their limit waits for the next write, which takes every item waiting
 * by then; with nothing in flight an item is written on the next turn of the event loop, with the
 * others submitted in the same turn. Under load each write carries many items, at no added delay
 * when idle; this matters because each round trip costs PostgreSQL and this process far more CPU
 * than the rows it writes.
 *
 * `write` gets the items and returns one output per item, in order. When a group fails for any
 * reason but an unreachable database, its items are written again one by one, so one bad item
 * fails only its own caller.
 */
export class GroupCommit<I, O> {
  readonly #waiting: Waiting<I, O>[] = [];
  #inFlight = 0;
  #scheduled = false;

  constructor(
    private readonly write: (items: I[]) => Promise<O[]>,
    private readonly options: GroupCommitOptions,
  ) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled || this.#inFlight >= this.options.maxInFlight || this.#waiting.length === 0) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      void this.#flush();
    });
  }

  async #flush(): Promise<void> {
    const group = this.#waiting.splice(0, this.options.maxItems);
    if (group.length === 0) return;
    this.#inFlight++;
    this.#schedule();
    try {
      await this.#writeGroup(group);
    } finally {
      this.#inFlight--;
      this.#schedule();
    }
  }

  async #writeGroup(group: Waiting<I, O>[]): Promise<void> {
    try {
      const outputs = await this.write(group.map((waiting) => waiting.item));
      group.forEach((waiting, i) => waiting.resolve(outputs[i]!));
    } catch (error) {
      if (group.length === 1 || isDatabaseUnavailable(error)) {
        for (const waiting of group) waiting.reject(error);
        return;
      }
      // One at a time: the group's own connections and locks stay bounded while it is split.
      for (const waiting of group) await this.#writeGroup([waiting]);
    }
  }
}
