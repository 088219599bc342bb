import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { MikroORM } from '@mikro-orm/postgresql';
import { ormConfig } from '../mikro-orm.config.ts';
import { connectOrm } from '../src/database.ts';
import type { Orm } from '../src/db/orm.ts';
import { queryRows } from './support/database.ts';

/** Every table the entities declare (src/entities.ts). */
const TABLES = [
  'api_keys',
  'attempts',
  'audit_entries',
  'divergences',
  'events',
  'fulfillments',
  'held_fulfillments',
  'held_supplier_cancellations',
  'rate_limit_counters',
  'reconciliation_runs',
  'reconciliation_watermarks',
  'refresh_tokens',
  'reseller_stores',
  'routed_orders',
  'source_store_domains',
  'source_stores',
  'store_pacing',
  'store_status_counts',
  'sync_jobs',
  'users',
  'watch_passes',
  'watch_watermarks',
  'webhook_deliveries',
  'webhook_endpoints',
];

async function admin<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: inject('pgAdminUrl') });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/** An empty database: from template0, so not even the test template's migrations are in it. */
async function createEmptyDatabase(): Promise<{ name: string; url: string }> {
  const name = `empty_${randomBytes(6).toString('hex')}`;
  await admin((client) => client.query(`create database ${name} template template0`));
  const url = new URL(inject('pgAdminUrl'));
  url.pathname = `/${name}`;
  return { name, url: url.toString() };
}

const tablesOf = async (url: string) =>
  (
    await queryRows<{ table_name: string }>(
      url,
      `select table_name from information_schema.tables where table_schema = 'public' order by table_name`,
    )
  ).map((row) => row.table_name);

let database: { name: string; url: string };
let orm: Orm | undefined;
beforeAll(async () => {
  database = await createEmptyDatabase();
});
afterAll(async () => {
  await orm?.close();
  await admin((client) => client.query(`drop database if exists ${database.name} with (force)`));
});

const MIGRATE_TWICE_TIMEOUT_MS = 90_000;

describe('migrations', () => {
  it('apply to an empty database', async () => {
    expect(await tablesOf(database.url)).toEqual([]);
    orm = await connectOrm(database.url, 2);
    const tables = await tablesOf(database.url);
    expect(tables).toEqual(expect.arrayContaining(TABLES));
    expect(tables).toContain('mikro_orm_migrations');
    expect(await orm.migrator.getPending()).toEqual([]);
  });

  it('running them again is a no-op', async () => {
    const before = await queryRows(database.url, 'select name, executed_at from mikro_orm_migrations order by id');
    expect(before.length).toBeGreaterThan(0);
    const again = await connectOrm(database.url, 2);
    try {
      expect(await again.migrator.up()).toEqual([]);
    } finally {
      await again.close();
    }
    expect(await queryRows(database.url, 'select name, executed_at from mikro_orm_migrations order by id')).toEqual(before);
  });

  it('leave no difference between the entities and the migrated schema', async () => {
    const diff = await orm!.schema.getUpdateSchemaSQL({ wrap: false });
    expect(diff.trim(), `entities and migrations disagree; run \`npm run migration:create\`:\n${diff}`).toBe('');
  });

  it('enforce the partial unique indexes the services rely on', async () => {
    const indexes = (
      await queryRows<{ indexdef: string }>(database.url, `select indexdef from pg_indexes where schemaname = 'public'`)
    ).map((row) => row.indexdef);
    expect(indexes.some((d) => /UNIQUE INDEX reseller_stores_active_shop_domain_unique .*\(shop_domain\) WHERE \(deleted_at IS NULL\)/.test(d))).toBe(true);
    expect(
      indexes.some((d) => /UNIQUE INDEX source_stores_active_vendor_key_unique .*\(reseller_store_id, vendor_key\) WHERE \(deleted_at IS NULL\)/.test(d)),
    ).toBe(true);
    // One running reconciliation per store, across every process.
    expect(
      indexes.some((d) => /UNIQUE INDEX reconciliation_runs_one_running_per_store .*\(reseller_store_id\) WHERE \(status = 'running'::text\)/.test(d)),
    ).toBe(true);
  });

  // Migrates a fresh database in two steps (every migration, each its own transaction with fsync):
  // on a machine loaded by other suites that took past the default 30 s (three times), 0.8 s alone.
  it('record the orders routed before routed_orders existed: by their webhook jobs, or their unmatched lines', async () => {
    const earlier = await createEmptyDatabase();
    const partial = await MikroORM.init(ormConfig(earlier.url, { pool: { min: 0, max: 2 } }));
    try {
      await partial.migrator.up({ to: 'Migration20261122062836' });
      const job = (id: string, order: string, source: string, origin: string) =>
        queryRows(
          earlier.url,
          `insert into sync_jobs (id, owner_id, reseller_store_id, source_store_id, external_order_id, origin, status, attempts,
             machine_state, version, created_at, updated_at)
           values ($1, 'usr_1', 'rst_1', $2, $3, $4, 'completed', 1, '{}', 1, now(), now())`,
          [id, source, order, origin],
        );
      await job('job_1', '1001', 'sst_1', 'webhook');
      await job('job_2', '1001', 'sst_2', 'webhook');
      await job('job_3', '1002', 'sst_1', 'manual');
      await queryRows(
        earlier.url,
        `insert into audit_entries (id, owner_id, reseller_store_id, action, resource_type, resource_id, metadata, actor_id, created_at)
         values ('aud_1', 'usr_1', 'rst_1', 'order.lines_unmatched', 'order', '1003', '{}', 'system', now())`,
      );
      await partial.migrator.up();
      expect(await queryRows(earlier.url, 'select reseller_store_id, external_order_id, source from routed_orders order by external_order_id')).toEqual([
        { reseller_store_id: 'rst_1', external_order_id: '1001', source: 'webhook' },
        { reseller_store_id: 'rst_1', external_order_id: '1003', source: 'webhook' },
      ]);
    } finally {
      await partial.close();
      await admin((client) => client.query(`drop database if exists ${earlier.name} with (force)`));
    }
  }, MIGRATE_TWICE_TIMEOUT_MS);

  it('recompute the stored vendor keys with the current fold; of active stores folding alike, one takes the key', async () => {
    const earlier = await createEmptyDatabase();
    const partial = await MikroORM.init(ormConfig(earlier.url, { pool: { min: 0, max: 2 } }));
    try {
      await partial.migrator.up({ to: 'Migration20261126225759' });
      await queryRows(
        earlier.url,
        `insert into reseller_stores (id, owner_id, name, platform, shop_domain, access_token_encrypted, webhook_secret_encrypted, created_at)
         values ('rst_1', 'usr_1', 'Shop', 'platform_a', 'shop.example.com', 'x', 'x', now()), ('rst_2', 'usr_1', 'Other', 'platform_a', 'other.example.com', 'x', 'x', now())`,
      );
      const store = (id: string, reseller: string, tag: string, key: string, createdAt: string, deleted = false) =>
        queryRows(
          earlier.url,
          `insert into source_stores (id, owner_id, reseller_store_id, name, platform, shop_domain, vendor_tag, vendor_key, pricing_mode, pricing_config,
             access_token_encrypted, webhook_secret_encrypted, created_at, deleted_at)
           values ($1, 'usr_1', $2, 'S', 'custom', $7, $3, $4, 'percentage', '{"type":"percentage","value":0}', 'x', 'x', $5, $6)`,
          [id, reseller, tag, key, createdAt, deleted ? createdAt : null, `${id.replace('_', '-')}.example.com`],
        );
      // As the old folds keyed them: trimmed and lower-cased (no NFKC), upper-then-lower once ('ẞ' → 'ß').
      await store('sst_a', 'rst_1', 'STRAẞE', 'straße', '2026-01-01');
      await store('sst_b', 'rst_1', 'Straße', 'strasse', '2026-01-02');
      await store('sst_c', 'rst_1', 'GROẞ', 'groß', '2026-01-03');
      await store('sst_d', 'rst_1', 'Cafe\u0301', 'cafe\u0301', '2026-01-04');
      await store('sst_e', 'rst_1', 'ＣＡＦÉ', 'ｃａｆé', '2026-01-05');
      await store('sst_f', 'rst_2', 'STRAẞE', 'straße', '2026-01-06');
      await store('sst_g', 'rst_1', 'MAẞ', 'maß', '2026-01-07', true);
      await partial.migrator.up();
      expect(await queryRows(earlier.url, 'select id, vendor_key from source_stores order by id')).toEqual([
        // 'strasse' was sst_b's already: it keeps it, and sst_a keeps its own (both stay active).
        { id: 'sst_a', vendor_key: 'straße' },
        { id: 'sst_b', vendor_key: 'strasse' },
        { id: 'sst_c', vendor_key: 'gross' },
        // Neither held 'café' (NFKC): the older takes it, the younger keeps its fullwidth key.
        { id: 'sst_d', vendor_key: 'café' },
        { id: 'sst_e', vendor_key: 'ｃａｆé' },
        { id: 'sst_f', vendor_key: 'strasse' },
        { id: 'sst_g', vendor_key: 'mass' },
      ]);
    } finally {
      await partial.close();
      await admin((client) => client.query(`drop database if exists ${earlier.name} with (force)`));
    }
  }, MIGRATE_TWICE_TIMEOUT_MS);

  it('tell the reseller once of the active suppliers whose tags fold alike: an audit entry on each, naming the others', async () => {
    const earlier = await createEmptyDatabase();
    const partial = await MikroORM.init(ormConfig(earlier.url, { pool: { min: 0, max: 2 } }));
    try {
      await partial.migrator.up({ to: 'Migration20261127060000' });
      await queryRows(
        earlier.url,
        `insert into reseller_stores (id, owner_id, name, platform, shop_domain, access_token_encrypted, webhook_secret_encrypted, created_at)
         values ('rst_1', 'usr_1', 'Shop', 'platform_a', 'shop.example.com', 'x', 'x', now()), ('rst_2', 'usr_2', 'Other', 'platform_a', 'other.example.com', 'x', 'x', now())`,
      );
      const store = (id: string, owner: string, reseller: string, tag: string, key: string, deleted = false) =>
        queryRows(
          earlier.url,
          `insert into source_stores (id, owner_id, reseller_store_id, name, platform, shop_domain, vendor_tag, vendor_key, pricing_mode, pricing_config,
             access_token_encrypted, webhook_secret_encrypted, created_at, deleted_at)
           values ($1, $2, $3, 'S', 'custom', $6, $4, $5, 'percentage', '{"type":"percentage","value":0}', 'x', 'x', now(), $7)`,
          [id, owner, reseller, tag, key, `${id.replace('_', '-')}.example.com`, deleted ? new Date() : null],
        );
      // As Migration20261127041900 leaves twins: one holds the key, the other keeps its own.
      await store('sst_a', 'usr_1', 'rst_1', 'STRAẞE', 'straße');
      await store('sst_b', 'usr_1', 'rst_1', 'Straße', 'strasse');
      await store('sst_c', 'usr_1', 'rst_1', 'Kiosk', 'kiosk');
      // A deleted twin, and the same tag under another reseller store: neither shares anything.
      await store('sst_d', 'usr_1', 'rst_1', 'STRASSE', 'sst_d', true);
      await store('sst_e', 'usr_2', 'rst_2', 'STRAẞE', 'strasse');
      await partial.migrator.up();
      const entries = await queryRows<Record<string, unknown>>(
        earlier.url,
        `select owner_id, reseller_store_id, action, resource_type, resource_id, actor_id, metadata->>'vendorTag' as vendor_tag, metadata->'sharedWith' as shared_with
           from audit_entries order by resource_id`,
      );
      expect(entries).toEqual([
        { owner_id: 'usr_1', reseller_store_id: 'rst_1', action: 'source_store.vendor_tag_shared', resource_type: 'source_store', resource_id: 'sst_a', actor_id: 'system', vendor_tag: 'STRAẞE', shared_with: ['sst_b'] },
        { owner_id: 'usr_1', reseller_store_id: 'rst_1', action: 'source_store.vendor_tag_shared', resource_type: 'source_store', resource_id: 'sst_b', actor_id: 'system', vendor_tag: 'Straße', shared_with: ['sst_a'] },
      ]);
      const ids = await queryRows<{ id: string }>(earlier.url, `select id from audit_entries`);
      for (const { id } of ids) expect(id).toMatch(/^aud_[0-9a-f]{32}$/);
    } finally {
      await partial.close();
      await admin((client) => client.query(`drop database if exists ${earlier.name} with (force)`));
    }
  }, MIGRATE_TWICE_TIMEOUT_MS);
});
