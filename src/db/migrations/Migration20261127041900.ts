import { Migration } from '@mikro-orm/migrations';

/** The fold of src/pricing/vendor.ts as of this migration (NFKC, upper-then-lower twice, NFKC, trimmed). */
const fold = (text: string): string => text.toUpperCase().toLowerCase();
const vendorKeyOf = (tag: string): string => fold(fold(tag.normalize('NFKC'))).normalize('NFKC').trim();

/** The `vendor_key` column is varchar(200): characters, i.e. code points. */
const VENDOR_KEY_MAX_LENGTH = 200;

interface Row {
  id: string;
  reseller_store_id: string;
  vendor_tag: string;
  vendor_key: string;
  deleted: boolean;
}

/**
 * Source stores' `vendor_key` (one active store per key and reseller store) recomputed with the
 * current fold: keys stored before NFKC (9a4ec33) and before the capital sharp s was folded to 'ss'
 * (05ef177) let a reseller store keep two active suppliers whose tags now fold alike ('Straße' keyed
 * 'strasse', 'STRAẞE' keyed 'straße'). The fold (JavaScript's full case mapping) has no equivalent in
 * PostgreSQL's lower(), so the keys are computed here and written back in this migration's transaction.
 *
 * Of active stores that now fold alike, one takes the key (the one already holding it, else the
 * oldest) and the others keep the key they had, unique as before: both stay active (deleting a
 * supplier is the reseller's call), routing sends a line both match to neither and reports it
 * (src/orders/routing.ts), and creation compares folded tags, not only stored keys
 * (src/source-stores/repository.ts `insertUnderLimit`). A key that would not fit the column stays too.
 */
export class Migration20261127041900 extends Migration {

  override name = 'Migration20261127041900';

  override async up(): Promise<void> {
    const rows = (await this.execute(
      `select id, reseller_store_id, vendor_tag, vendor_key, deleted_at is not null as deleted
         from source_stores order by reseller_store_id, created_at, id`,
    )) as Row[];
    const keys = new Map<string, string>();
    const groups = new Map<string, Row[]>();
    for (const row of rows) {
      const key = vendorKeyOf(row.vendor_tag);
      if ([...key].length > VENDOR_KEY_MAX_LENGTH) continue;
      if (row.deleted) {
        keys.set(row.id, key);
        continue;
      }
      const group = `${row.reseller_store_id}\n${key}`;
      groups.set(group, [...(groups.get(group) ?? []), row]);
    }
    for (const [group, members] of groups) {
      const key = group.slice(group.indexOf('\n') + 1);
      const holder = members.find((row) => row.vendor_key === key) ?? members[0]!;
      keys.set(holder.id, key);
    }
    // The others keep theirs. One whose kept key another store now takes (only if the old fold was
    // not a step of the new one) gets one of its own, '#' and its id (creation compares folded tags).
    const assigned = new Set(rows.filter((row) => !row.deleted && keys.has(row.id)).map((row) => `${row.reseller_store_id}\n${keys.get(row.id)}`));
    for (const row of rows) {
      if (row.deleted || keys.has(row.id)) continue;
      if (assigned.has(`${row.reseller_store_id}\n${row.vendor_key}`)) keys.set(row.id, `#${row.id}`);
    }
    const changes = rows.filter((row) => keys.has(row.id) && keys.get(row.id) !== row.vendor_key).map((row) => ({ id: row.id, key: keys.get(row.id)! }));
    if (changes.length === 0) return;
    const json = JSON.stringify(changes);
    // In two steps, so no store takes a key another still holds until its own update.
    await this.execute(`update source_stores s set vendor_key = '#' || s.id from jsonb_to_recordset(?::jsonb) as c(id text, key text) where s.id = c.id`, [json]);
    await this.execute(`update source_stores s set vendor_key = c.key from jsonb_to_recordset(?::jsonb) as c(id text, key text) where s.id = c.id`, [json]);
  }

  override down(): void | Promise<void> {
    // The earlier keys are not kept: every one computed here is one the current service would store.
  }

}
