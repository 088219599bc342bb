import type { CancellationView } from '../cancellations/present.ts';
import type { Fulfillment } from '../fulfillments/entity.ts';

/** A job's fulfillments, as its GET shows them: the fulfillments' repository, handed in by the composition root (src/services.ts). */
export interface FulfillmentReads {
  listForJob(syncJobId: string): Promise<Fulfillment[]>;
}

/** A job's cancellations with their timelines, as its GET shows them: the cancellations feature, handed in by the composition root. */
export interface CancellationReads {
  viewsOfJob(syncJobId: string): Promise<CancellationView[]>;
}
