/**
 * Preloaded into the service processes the tests start as children (never into the service itself): when
 * the test process that started this one goes away without stopping it (the runner was killed), take
 * the whole process group down, embedded PostgreSQL included, instead of living on as an orphan.
 */
import { readdirSync, readFileSync } from 'node:fs';

const parent = process.ppid;
setInterval(() => {
  if (process.ppid === parent) return;
  // The embedded PostgreSQL runs in a process group of its own (shielded from a terminal's Ctrl-C).
  for (const child of childProcesses()) {
    try {
      process.kill(-child, 'SIGKILL');
    } catch {
      // not a group leader, or gone: the group kill below covers the first
    }
  }
  try {
    process.kill(-process.pid, 'SIGKILL');
  } catch {
    process.exit(1);
  }
}, 500).unref();

function childProcesses(): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Fields after the command (which may hold spaces) in parentheses: state, then the parent's pid.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === process.pid) children.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return children;
}
