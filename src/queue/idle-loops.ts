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
/** Wake-ups (`wakeAt`) are coalesced to this grain. */
const WAKE_GRAIN_MS = 50;
/** A wake-up comes this long after the message's start, so the fetch finds it due (pg-boss: start_after < now()). */
const WAKE_MARGIN_MS = 10;

export class IdleLoops {
  #scout: IdleLoop | null = null;
  readonly #parked: { loop: IdleLoop; wake: (pauseFirst: boolean) => void }[] = [];
  readonly #sleeping = new Set<() => void>();
  /** Wake-ups for messages known to become due (`wakeAt`), by due time rounded up to WAKE_GRAIN_MS. */
  readonly #wakeUps = new Map<number, NodeJS.Timeout>();
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
    // After a full batch (more is waiting) the woken loop fetches at once; otherwise it pauses first,
    // as a scout whose poll found nothing.
    this.#wakeParked(!full);
  }

  /** Wakes the longest-parked loop, which takes the watch if it is vacant. */
  #wakeParked(pauseFirst: boolean): void {
    const next = this.#parked.shift();
    if (next === undefined) return;
    if (this.#scout === null) this.#scout = next.loop;
    next.wake(pauseFirst);
  }

  /**
   * A message of this queue becomes due at `atMs` (epoch milliseconds; a message postponed to its
   * store's turn, src/pacing/attempt-turns.ts): the scout fetches then, not up to `scoutPollMs` later.
   * A turn fetched more than a second late is void and its job goes to the back of its store's
   * backlog, so with QUEUE_IDLE_POLL_MS over a second a backlog lost a turn in four and drained
   * that much slower. Wake-ups due within WAKE_GRAIN_MS of each other are one timer.
   */
  wakeAt(atMs: number): void {
    if (this.#stopped) return;
    const due = Math.ceil(atMs / WAKE_GRAIN_MS) * WAKE_GRAIN_MS + WAKE_MARGIN_MS;
    if (this.#wakeUps.has(due)) return;
    const timer = setTimeout(() => {
      this.#wakeUps.delete(due);
      this.#wake();
    }, Math.max(0, due - Date.now()));
    timer.unref();
    this.#wakeUps.set(due, timer);
  }

  /** Cuts the scout's poll short (or, with no scout polling, makes a parked loop the scout and lets it fetch now). */
  #wake(): void {
    if (this.#stopped) return;
    if (this.#sleeping.size > 0) {
      for (const wake of [...this.#sleeping]) wake();
      return;
    }
    if (this.#scout === null) this.#wakeParked(false);
  }

  /** Wakes every waiting loop (the queue is stopping); waits return at once from here on. */
  stop(): void {
    this.#stopped = true;
    for (const timer of this.#wakeUps.values()) clearTimeout(timer);
    this.#wakeUps.clear();
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
