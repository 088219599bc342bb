import type { ColumnType, Generated } from 'kysely';

/**
 * The tables the repositories query with Kysely, column by column as PostgreSQL reports them
 * (`information_schema.columns.data_type`; ` null` = nullable, ` default` = has a default).
 * `Database` below is derived from this, and test/schema.test.ts checks it against the migrated
 * schema, so a query on a column that does not exist, or with the wrong type, fails to compile
 * rather than at run time. The entities (MikroORM) remain what migrations are generated from.
 */
export const TABLES = {
  sync_jobs: {
    id: 'character varying',
    owner_id: 'character varying',
    reseller_store_id: 'character varying',
    source_store_id: 'character varying',
    external_order_id: 'character varying',
    origin: 'text',
    status: 'text',
    attempts: 'integer',
    retries_left: 'integer',
    source_order_id: 'character varying null',
    error_message: 'text null',
    completed_at: 'timestamp with time zone null',
    failed_at: 'timestamp with time zone null',
    dead_at: 'timestamp with time zone null',
    order: 'jsonb null',
    queue_message_id: 'character varying null',
    version: 'integer default',
    created_at: 'timestamp with time zone',
    updated_at: 'timestamp with time zone',
    supplier_cancelled_at: 'timestamp with time zone null',
    supplier_cancel_reason: 'text null',
  },
  cancellations: {
    id: 'character varying',
    owner_id: 'character varying',
    reseller_store_id: 'character varying',
    sync_job_id: 'character varying',
    signal_id: 'character varying',
    scope: 'text',
    lines: 'jsonb',
    status: 'text',
    attempts: 'integer',
    retries_left: 'integer',
    outcome: 'text null',
    reason: 'text null',
    error_message: 'text null',
    completed_at: 'timestamp with time zone null',
    failed_at: 'timestamp with time zone null',
    dead_at: 'timestamp with time zone null',
    queue_message_id: 'character varying null',
    version: 'integer default',
    created_at: 'timestamp with time zone',
    updated_at: 'timestamp with time zone',
  },
  order_cancellations: {
    id: 'character varying',
    owner_id: 'character varying',
    reseller_store_id: 'character varying',
    external_order_id: 'character varying',
    scope: 'text',
    lines: 'jsonb',
    dedupe_key: 'character varying',
    received_at: 'timestamp with time zone',
  },
  fulfillments: {
    id: 'character varying',
    owner_id: 'character varying',
    reseller_store_id: 'character varying',
    sync_job_id: 'character varying',
    dedupe_key: 'character varying',
    webhook_id: 'character varying null',
    status: 'text',
    attempts: 'integer',
    retries_left: 'integer',
    tracking: 'jsonb',
    reseller_fulfillment_id: 'character varying null',
    error_message: 'text null',
    completed_at: 'timestamp with time zone null',
    failed_at: 'timestamp with time zone null',
    dead_at: 'timestamp with time zone null',
    queue_message_id: 'character varying null',
    version: 'integer default',
    created_at: 'timestamp with time zone',
    updated_at: 'timestamp with time zone',
  },
  held_fulfillments: {
    id: 'character varying',
    owner_id: 'character varying',
    reseller_store_id: 'character varying',
    source_store_id: 'character varying',
    source_order_id: 'character varying',
    dedupe_key: 'character varying',
    webhook_id: 'character varying null',
    tracking: 'jsonb',
    received_at: 'timestamp with time zone',
  },
  audit_entries: {
    id: 'character varying',
    owner_id: 'character varying',
    reseller_store_id: 'character varying',
    action: 'character varying',
    resource_type: 'character varying',
    resource_id: 'character varying',
    metadata: 'jsonb',
    actor_id: 'character varying',
    created_at: 'timestamp with time zone',
  },
  attempts: {
    row_id: 'character varying',
    attempt: 'integer',
    kind: 'text',
    owner_id: 'character varying',
    reseller_store_id: 'character varying',
    trigger: 'text',
    started_at: 'timestamp with time zone',
    finished_at: 'timestamp with time zone null',
    outcome: 'text',
    error_message: 'text null',
    platform_status: 'smallint null',
    result: 'character varying null',
  },
  source_stores: {
    id: 'character varying',
    owner_id: 'character varying',
    reseller_store_id: 'character varying',
    name: 'character varying',
    platform: 'text',
    shop_domain: 'character varying',
    vendor_tag: 'character varying',
    vendor_key: 'character varying',
    pricing_mode: 'text',
    pricing_config: 'jsonb',
    access_token_encrypted: 'text',
    webhook_secret_encrypted: 'text',
    created_at: 'timestamp with time zone',
    deleted_at: 'timestamp with time zone null',
    webhook_proven_at: 'timestamp with time zone null',
  },
  reseller_stores: {
    id: 'character varying',
    owner_id: 'character varying',
    name: 'character varying',
    platform: 'text',
    shop_domain: 'character varying',
    access_token_encrypted: 'text',
    webhook_secret_encrypted: 'text',
    created_at: 'timestamp with time zone',
    deleted_at: 'timestamp with time zone null',
  },
  routed_orders: {
    reseller_store_id: 'character varying',
    external_order_id: 'character varying',
    source: 'text',
    routed_at: 'timestamp with time zone',
  },
  reconciliation_runs: {
    id: 'character varying',
    owner_id: 'character varying',
    reseller_store_id: 'character varying',
    trigger: 'text',
    status: 'text',
    requested_since: 'timestamp with time zone null',
    since: 'timestamp with time zone null',
    orders_seen: 'integer',
    orders_routed: 'integer',
    error: 'text null',
    takes: 'integer',
    lease_expires_at: 'timestamp with time zone',
    started_at: 'timestamp with time zone',
    finished_at: 'timestamp with time zone null',
  },
  reconciliation_watermarks: {
    reseller_store_id: 'character varying',
    watermark: 'timestamp with time zone',
    reconciled_until: 'timestamp with time zone',
    updated_at: 'timestamp with time zone',
  },
  events: {
    id: 'character varying',
    owner_id: 'character varying',
    reseller_store_id: 'character varying null',
    type: 'character varying',
    payload: 'text',
    created_at: 'timestamp with time zone',
  },
  webhook_endpoints: {
    id: 'character varying',
    owner_id: 'character varying',
    url: 'text',
    enabled_events: 'jsonb',
    description: 'text null',
    status: 'text',
    disabled_reason: 'text null',
    secret_encrypted: 'text',
    previous_secret_encrypted: 'text null',
    previous_secret_expires_at: 'timestamp with time zone null',
    failing_since: 'timestamp with time zone null',
    created_at: 'timestamp with time zone',
    updated_at: 'timestamp with time zone',
  },
  webhook_deliveries: {
    id: 'character varying',
    owner_id: 'character varying',
    endpoint_id: 'character varying',
    event_id: 'character varying',
    event_type: 'character varying',
    status: 'text',
    attempts: 'integer',
    schedule_attempts: 'integer',
    last_attempt_at: 'timestamp with time zone null',
    next_attempt_at: 'timestamp with time zone null',
    last_response_status: 'integer null',
    last_error: 'text null',
    last_response_excerpt: 'text null',
    duration_ms: 'integer null',
    sending_until: 'timestamp with time zone null',
    queue_message_id: 'character varying null',
    version: 'integer default',
    created_at: 'timestamp with time zone',
    updated_at: 'timestamp with time zone',
  },
  store_pacing: {
    store_id: 'character varying',
    next_at: 'timestamp with time zone',
    paused_until: 'timestamp with time zone null',
  },
  rate_limit_counters: {
    key: 'character varying',
    hits: 'integer',
    resets_at: 'timestamp with time zone',
  },
  source_store_domains: {
    shop_domain: 'character varying',
    version: 'integer',
  },
} as const;

type SqlType = 'character varying' | 'text' | 'integer' | 'smallint' | 'jsonb' | 'timestamp with time zone';

/** jsonb is read back parsed; it is written as JSON text (node-pg would turn an array into a PostgreSQL array). */
type Jsonb = ColumnType<unknown, string, string>;

type ValueOf<T extends SqlType> = T extends 'integer' | 'smallint'
  ? number
  : T extends 'timestamp with time zone'
    ? ColumnType<Date, Date | string, Date | string>
    : T extends 'jsonb'
      ? Jsonb
      : string;

type ColumnOf<S extends string> = S extends `${infer T extends SqlType} null`
  ? ValueOf<T> | null
  : S extends `${infer T extends SqlType} default`
    ? Generated<ValueOf<T> extends ColumnType<infer V, unknown, unknown> ? V : ValueOf<T>>
    : S extends SqlType
      ? ValueOf<S>
      : never;

type TableOf<T extends Record<string, string>> = { -readonly [C in keyof T]: ColumnOf<T[C]> };

/** The database as typed Kysely sees it (`sqlOf`). */
export type Database = { -readonly [T in keyof typeof TABLES]: TableOf<(typeof TABLES)[T]> };
