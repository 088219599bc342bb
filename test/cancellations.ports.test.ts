/**
 * The ports through which features record the order a job in doubt turned out to have
 * (src/sync-jobs/repository.ts `recordFoundOrder`): each says whether it was recorded now (false:
 * the job had an order already, or is not one ended unplaced), as the repository answers. The
 * cancellations' port was typed `Promise<unknown>`, so a caller could not act on that answer
 * without a cast. Checked by the type checker (`tsc --noEmit -p .`); at run time these are no-ops.
 */
import { expectTypeOf, it } from 'vitest';
import type { CancelledJobs } from '../src/cancellations/ports.ts';
import type { WatchedJobs } from '../src/divergence-watch/ports.ts';
import type { SyncJobRepository } from '../src/sync-jobs/repository.ts';
import type { UnplacedJobs } from '../src/fulfillments/ports.ts';

it('every port that records a found order answers whether it recorded it now, as the repository does', () => {
  expectTypeOf<ReturnType<SyncJobRepository['recordFoundOrder']>>().toEqualTypeOf<Promise<boolean>>();
  expectTypeOf<ReturnType<CancelledJobs['recordFoundOrderIn']>>().toEqualTypeOf<Promise<boolean>>();
  expectTypeOf<ReturnType<WatchedJobs['recordFoundOrder']>>().toEqualTypeOf<Promise<boolean>>();
  expectTypeOf<ReturnType<UnplacedJobs['recordFoundOrder']>>().toEqualTypeOf<Promise<boolean>>();
});
