/**
 * The idle loops of one settling consumer (src/queue/queue.ts `consumeSettling`). While its queue
 * is empty, one loop (the scout) polls every `scoutPollMs` and the others are parked, so a new
 * message waits about that long for a loop, yet idle loops do not split the batches of busy ones by
 * each polling on its own (eight loops polling often fetched one or two messages each, and every
 * message then paid for more of its batch's statements).
 *
 * A loop that fetched something lets the scout role go, to a parked loop if there is one, so some
 * loop keeps watching the queue while it works. One whose batch came back full (a backlog) also
 * wakes a parked loop to fetch at once, which wakes the next if its batch is full too: a backlog
 * fans out over every loop. A parked loop still polls every `parkedPollMs`, in case a wake-up went
 * to a loop that stopped meanwhile.
 */
export class IdleLoops {
  #scout: IdleLoop | null = null;
  readonly #parked: { loop: IdleLoop; wake: (asScout: boolean) => void }[] = [];
  readonly #sleeping = new Set<() => void>();
  #stopped = false;

  constructor(private readonly timing: { scoutPollMs: number; parkedPollMs: number }) {}

  /** A loop's identity within the group. */
  loop(): IdleLoop {
    return new IdleLoop();
  }

  /** After `loop` found the queue empty: waits until it should fetch again. */
  async waitAfterEmptyFetch(loop: IdleLoop): Promise<void> {
    if (this.#scout === null || this.#scout === loop) {
      this.#scout = loop;
      await this.#sleep(this.timing.scoutPollMs);
      return;
    }
    const asScout = await this.#park(loop);
    if (asScout) await this.#sleep(this.timing.scoutPollMs);
  }

  /** After `loop` fetched messages (`full`: as many as it asked for), before it handles them. */
  fetched(loop: IdleLoop, full: boolean): void {
    const wasScout = this.#scout === loop;
    if (wasScout) this.#scout = null;
    if (!full && !wasScout) return;
    const next = this.#parked.shift();
    if (next === undefined) return;
    // A full batch means more is waiting: the woken loop fetches at once. Otherwise it takes over the watch.
    if (!full) this.#scout = next.loop;
    next.wake(!full);
  }

  /** Wakes every waiting loop (the queue is stopping); waits return at once from here on. */
  stop(): void {
    this.#stopped = true;
    for (const { wake } of this.#parked.splice(0)) wake(false);
    for (const wake of [...this.#sleeping]) wake();
  }

  /** The loops parked now (for tests and metrics). */
  get parkedCount(): number {
    return this.#parked.length;
  }

  #park(loop: IdleLoop): Promise<boolean> {
    if (this.#stopped) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const entry = {
        loop,
        wake: (asScout: boolean) => {
          clearTimeout(timer);
          resolve(asScout);
        },
      };
      const timer = setTimeout(() => {
        const at = this.#parked.indexOf(entry);
        if (at >= 0) this.#parked.splice(at, 1);
        resolve(false);
      }, this.timing.parkedPollMs);
      this.#parked.push(entry);
    });
  }

  #sleep(ms: number): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#sleeping.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#sleeping.add(done);
    });
  }
}

/** One loop of an `IdleLoops` group. */
export class IdleLoop {}
