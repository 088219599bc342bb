import type { Orm } from '../db/orm.ts';
import { sqlOf } from '../db/sql.ts';
import { SourceStore } from './entity.ts';

/** Statements on source_stores the webhook path needs without the unit of work. */
export class SourceStoreRepository {
  constructor(private readonly orm: Orm) {}

  /**
   * The version of a supplier domain's source stores (bumped by a trigger on any change to any of
   * them, see the entity); null when no source store ever had the domain. One indexed read.
   */
  async domainVersion(shopDomain: string): Promise<number | null> {
    const row = await sqlOf(this.orm).selectFrom('source_store_domains').select('version').where('shop_domain', '=', shopDomain).executeTakeFirst();
    return row?.version ?? null;
  }

  /** The active source stores of a domain (several users may have a record of one supplier). */
  activeByDomain(shopDomain: string): Promise<SourceStore[]> {
    return this.orm.em.fork().find(SourceStore, { shopDomain, deletedAt: null });
  }

  /** Records the first time these stores' webhook secret verified a delivery (kept once set). */
  async markWebhookProven(ids: string[]): Promise<void> {
    await sqlOf(this.orm)
      .updateTable('source_stores')
      .set({ webhook_proven_at: new Date() })
      .where('id', 'in', ids)
      .where('webhook_proven_at', 'is', null)
      .execute();
  }
}
