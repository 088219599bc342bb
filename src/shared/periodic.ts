/**
 * Runs `pass` every `intervalMs`, each pass starting `intervalMs` after the previous one ended (so
 * passes never overlap), the first after `firstAfterMs`, until the returned function is called; that
 * function waits for a pass in progress. A pass handles its own errors.
 */
export function every(intervalMs: number, pass: () => Promise<void>, firstAfterMs = intervalMs): () => Promise<void> {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const next = (afterMs = intervalMs) => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = pass().finally(() => next());
    }, afterMs);
  };
  next(firstAfterMs);
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await running;
  };
}
