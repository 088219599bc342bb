/**
 * Runs `pass` every `intervalMs`, each pass starting `intervalMs` after the previous one ended (so
 * passes never overlap), until the returned function is called; that function waits for a pass in
 * progress. A pass handles its own errors.
 */
export function every(intervalMs: number, pass: () => Promise<void>): () => Promise<void> {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const next = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = pass().finally(next);
    }, intervalMs);
  };
  next();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await running;
  };
}
