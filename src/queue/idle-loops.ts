/**
 * The idle loops of one settling consumer (src/queue/queue.ts `consumeSettling`). While its queue
 * is empty, one loop (the scout) polls every `scoutPollMs` and the others are parked, so a new
 * message waits about that long for a loop, yet idle loops do not split the batches of busy ones by
 * each polling on its own (eight loops polling often fetched one or two messages each, and every
 * message then paid for more of its batch's statements).
 *
 * A scout that fetched something hands the role to a parked loop, so some loop keeps watching the
 * queue while it works; so does any loop that finds the role vacant. A loop whose batch came back
 * full (a backlog) also wakes a parked loop to fetch at once, which wakes the next if its batch is
 * full too: a backlog fans out over every loop. A parked loop still polls every `parkedPollMs`, a
 * safety net only.
 */
export class IdleLoops {
  #scout: IdleLoop | null = null;
  readonly #parked: { loop: IdleLoop; wake: (pauseFirst: boolean) => void }[] = [];
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
      await this.pause(this.timing.scoutPollMs);
      return;
    }
    const pauseFirst = await this.#park(loop);
    if (pauseFirst) await this.pause(this.timing.scoutPollMs);
  }

  /** After `loop` fetched messages (`full`: as many as it asked for), before it handles them. */
  fetched(loop: IdleLoop, full: boolean): void {
    if (this.#scout === loop) this.#scout = null;
    if (!full && this.#scout !== null) return;
    const next = this.#parked.shift();
    if (next === undefined) return;
    // A vacant watch goes to the woken loop. After a full batch (more is waiting) it fetches at once;
    // otherwise it pauses first, as a scout whose poll found nothing.
    if (this.#scout === null) this.#scout = next.loop;
    next.wake(!full);
  }

  /** Wakes every waiting loop (the queue is stopping); waits return at once from here on. */
  stop(): void {
    this.#stopped = true;
    for (const { wake } of this.#parked.splice(0)) wake(false);
    for (const wake of [...this.#sleeping]) wake();
  }

  /** The loops parked now. */
  get parkedCount(): number {
    return this.#parked.length;
  }

  #park(loop: IdleLoop): Promise<boolean> {
    if (this.#stopped) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const entry = {
        loop,
        wake: (pauseFirst: boolean) => {
          clearTimeout(timer);
          resolve(pauseFirst);
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

  /** Waits `ms` (a loop whose fetch failed waits too), or less when the group stops. */
  pause(ms: number): Promise<void> {
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
export class IdleLoop {
  readonly #brand = true;
}
