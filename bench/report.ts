/** What a run prints and writes: the machine it ran on, and the table of figures against their targets. */
import { execSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { round } from './common.ts';
import { TARGETS, type Results } from './settings.ts';

export function machine() {
  const cpu = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? os.cpus()[0]?.model ?? 'unknown';
  let free = '';
  try {
    free = execSync('free -g', { encoding: 'utf8' }).trim();
  } catch {
    free = `${round(os.totalmem() / 2 ** 30)} GiB total`;
  }
  return { nproc: os.availableParallelism(), cpu, memory_gib: round(os.totalmem() / 2 ** 30), free, node: process.version, platform: `${os.type()} ${os.release()}`, loadavg_at_start: os.loadavg().map((l) => round(l, 2)) };
}

export function printTable(results: Results, notes: string[]): void {
  const rows = Object.entries(results).map(([key, value]) => {
    const target = TARGETS[key];
    const verdict = !target || typeof value !== 'number' ? '' : (target.op === '>=' ? value >= target.value : value <= target.value) ? 'met' : 'NOT met';
    return [key, String(value), target ? `${target.op} ${target.value}` : '', verdict];
  });
  const header = ['metric', 'value', 'target', ''];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 1 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(' | ')} |`;
  console.log(`\n${line(header)}\n|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const row of rows) console.log(line(row));
  if (notes.length > 0) console.log(`\nNotes:\n${notes.map((n) => `- ${n}`).join('\n')}`);
}
