import type { Fulfillment } from '../fulfillments/entity.ts';

/** A job's fulfillments, as its GET shows them: the fulfillments' repository, handed in by the composition root (src/services.ts). */
export interface FulfillmentReads {
  listForJob(syncJobId: string): Promise<Fulfillment[]>;
}
