/**
 * Preloaded into the service processes the tests start as children (never into the service itself): when
 * the test process that started this one goes away without stopping it (the runner was killed), take
 * the whole process group down, embedded PostgreSQL included, instead of living on as an orphan.
 */
const parent = process.ppid;
setInterval(() => {
  if (process.ppid === parent) return;
  try {
    process.kill(-process.pid, 'SIGKILL');
  } catch {
    process.exit(1);
  }
}, 500).unref();
