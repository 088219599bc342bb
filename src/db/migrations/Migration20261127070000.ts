import { Migration } from '@mikro-orm/migrations';
import { v7 as uuidv7 } from 'uuid';

/** The fold of src/pricing/vendor.ts as of this migration (NFKC, upper-then-lower twice, NFKC, trimmed). */
const fold = (text: string): string => text.toUpperCase().toLowerCase();
const vendorKeyOf = (tag: string): string => fold(fold(tag.normalize('NFKC'))).normalize('NFKC').trim();

interface Row {
  id: string;
  owner_id: string;
  reseller_store_id: string;
  vendor_tag: string;
}

/**
 * Tells each reseller once about the twin suppliers Migration20261127041900 kept: two or more active
 * source stores of one reseller store whose vendor tags fold alike ('Straße' and 'STRAẞE'). Routing
 * places a line they share on neither (reporting it per order, `order.unmatched`) and a manual job for
 * one of them is refused (409 `vendor_tag_ambiguous`), so their orders wait until the reseller deletes
 * one. Each of them gets one audit entry `source_store.vendor_tag_shared` (actor `system`), naming the
 * others in `metadata.sharedWith`: `GET /v1/audit_log?action=source_store.vendor_tag_shared` lists them.
 * (Neither an event nor a divergence: their types are closed sets, and a divergence names a sync job.)
 */
export class Migration20261127070000 extends Migration {

  override name = 'Migration20261127070000';

  override async up(): Promise<void> {
    const rows = (await this.execute(
      `select id, owner_id, reseller_store_id, vendor_tag from source_stores where deleted_at is null order by reseller_store_id, id`,
    )) as Row[];
    const groups = new Map<string, Row[]>();
    for (const row of rows) {
      const key = vendorKeyOf(row.vendor_tag);
      // A blank tag matches no line.
      if (key === '') continue;
      const group = `${row.reseller_store_id}\n${key}`;
      groups.set(group, [...(groups.get(group) ?? []), row]);
    }
    const entries = [...groups.values()]
      .filter((members) => members.length > 1)
      .flatMap((members) =>
        members.map((row) => ({
          id: `aud_${uuidv7().replaceAll('-', '')}`,
          owner_id: row.owner_id,
          reseller_store_id: row.reseller_store_id,
          resource_id: row.id,
          metadata: {
            vendorTag: row.vendor_tag,
            sharedWith: members.filter((other) => other !== row).map((other) => other.id),
            message: 'Another active source store of this reseller store has a vendor tag that matches the same lines: lines they share are placed on neither, and manual jobs for them are refused, until one of them is deleted.',
          },
        })),
      );
    if (entries.length === 0) return;
    await this.execute(
      `insert into audit_entries (id, owner_id, reseller_store_id, action, resource_type, resource_id, metadata, actor_id, created_at)
       select e.id, e.owner_id, e.reseller_store_id, 'source_store.vendor_tag_shared', 'source_store', e.resource_id, e.metadata, 'system', now()
         from jsonb_to_recordset(?::jsonb) as e(id text, owner_id text, reseller_store_id text, resource_id text, metadata jsonb)`,
      [JSON.stringify(entries)],
    );
  }

  override down(): void | Promise<void> {
    // The audit log is read-only: its entries stay.
  }

}
