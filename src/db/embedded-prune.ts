/**
 * Clusters a root service kept in the shared place (embedded-location.ts) for DATA_DIRs that are
 * gone: a deleted checkout, a removed throw-away DATA_DIR. Removing DATA_DIR cannot remove them
 * (the cluster is the postgres user's, outside it), so `npm run clusters:prune` does.
 */
import { existsSync, readdirSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { SHARED_PLACES } from './embedded-location.ts';
import { clusterInUse } from './embedded-processes.ts';

export interface AbandonedCluster {
  /** clusters/<key>: the cluster and its records. */
  home: string;
  /** The DATA_DIR it was made for, which no longer links to it. */
  dataDir: string;
}

/**
 * Clusters whose DATA_DIR no longer links to them and that no live service or server uses. A DATA_DIR
 * moved elsewhere and not started since looks the same (its record names the old path): its link
 * still works, and the next start there would make a new, empty cluster after a prune.
 */
export function abandonedClusters(places = SHARED_PLACES): AbandonedCluster[] {
  const found: AbandonedCluster[] = [];
  for (const place of places) {
    const clusters = path.join(place, 'clusters');
    if (!existsSync(clusters)) continue;
    for (const key of readdirSync(clusters)) {
      const home = path.join(clusters, key);
      if (!/^[0-9a-f]{16}$/.test(key) || !statSync(home).isDirectory()) continue;
      const dataDir = readRecord(path.join(home, 'data-dir'));
      if (dataDir !== null && linksHere(dataDir, home)) continue;
      if (clusterInUse(path.join(home, 'postgres'))) continue;
      found.push({ home, dataDir: dataDir ?? '(unknown)' });
    }
  }
  return found;
}

export function pruneClusters(clusters: AbandonedCluster[]): void {
  for (const { home } of clusters) rmSync(home, { recursive: true, force: true });
}

function readRecord(file: string): string | null {
  try {
    return readFileSync(file, 'utf8').trim() || null;
  } catch {
    return null;
  }
}

function linksHere(dataDir: string, home: string): boolean {
  try {
    return realpathSync(path.join(dataDir, 'postgres')) === realpathSync(path.join(home, 'postgres'));
  } catch {
    return false;
  }
}
