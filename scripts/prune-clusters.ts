/**
 * `npm run clusters:prune`: removes the embedded clusters a root service kept in
 * /var/lib/order-routing-service (or /var/tmp/…) for DATA_DIRs that no longer exist.
 * `npm run clusters:prune -- --dry-run` lists them and removes nothing.
 */
import { abandonedClusters, pruneClusters } from '../src/db/embedded-prune.ts';

const dryRun = process.argv.includes('--dry-run');
const clusters = abandonedClusters();
for (const { home, dataDir } of clusters) console.log(`${dryRun ? 'would remove' : 'removing'} ${home} (its DATA_DIR ${dataDir} is gone)`);
if (!dryRun) pruneClusters(clusters);
console.log(clusters.length === 0 ? 'no abandoned clusters' : `${clusters.length} abandoned cluster(s)${dryRun ? '' : ' removed'}`);
