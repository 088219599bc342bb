/**
 * Issue 6, item 4 (webhooks): property-based forged, tampered, replayed and oversized deliveries to
 * both webhook endpoints. A forgery (no signature, a random one, one made with another secret,
 * another store's domain) and a tampering (any byte of a signed body changed, added or removed,
 * even one that leaves the JSON meaning the same) answer 401 `invalid_signature`; a body over 1 MiB
 * answers 413 even when signed; a replay of an accepted delivery answers as the first one did. None
 * of them creates anything: no job, no fulfillment, no audit entry, no queue message, no supplier order.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signPayload } from '../../src/webhooks/signature.ts';
import { buildFulfillmentPayload, startSandbox, type Sandbox } from '../sandbox/server.ts';
import { queryRows } from '../support/database.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { waitFor } from '../support/wait.ts';
import { ChaosClient, createReseller, createSupplier, registerUser, unique, type ResellerFixture, type SupplierFixture } from './support/client.ts';
import { itLeaksNoSecret, ledger } from './support/ledger.ts';

const ORDERS = '/v1/orders/webhook';
const FULFILLMENTS = '/v1/fulfillments/webhook';

let sandbox: Sandbox;
let service: TestService;
let client: ChaosClient;
let token: string;
let reseller: ResellerFixture;
let other: ResellerFixture;
let suppliers: SupplierFixture[];
/** An order the suppliers already received, so fulfillments have something to attach to. */
let placed: { supplier: SupplierFixture; sourceOrderId: string }[];

interface Delivery {
  path: string;
  body: Buffer;
  headers: Record<string, string>;
}

function signed(path: string, body: Buffer, shopDomain: string, secret: string, topic = path === ORDERS ? 'orders/create' : 'fulfillments/create'): Delivery {
  return {
    path,
    body,
    headers: {
      'content-type': 'application/json',
      'x-platform-hmac-sha256': signPayload(body, secret),
      'x-platform-shop-domain': shopDomain,
      'x-platform-topic': topic,
      'x-platform-webhook-id': `wh-${unique()}`,
    },
  };
}

function post(delivery: Delivery) {
  return client.post(delivery.path, { rawBody: delivery.body, headers: delivery.headers });
}

/** Everything a delivery could have created. */
async function footprint() {
  const [row] = await queryRows<Record<string, string>>(
    service.databaseUrl,
    `select (select count(*) from sync_jobs) as jobs,
            (select count(*) from fulfillments) as fulfillments,
            (select count(*) from audit_entries) as audit,
            (select count(*) from pgboss.job) as messages`,
  );
  const supplierOrders = suppliers.map((supplier) => sandbox.ordersFor(supplier.shopDomain).length);
  const resellerFulfillments = sandbox.fulfillmentsFor(reseller.shopDomain).length;
  return { ...row, supplierOrders, resellerFulfillments };
}

const orderBody = (id: number) =>
  Buffer.from(
    JSON.stringify(
      sandbox.buildOrderPayload('platform_a', {
        id,
        lines: suppliers.map((supplier, i) => ({ sku: `W-${i}`, title: `Widget ${i}`, vendor: supplier.vendorTag, quantity: 1, price: '9.99' })),
      }),
    ),
  );

const fulfillmentBody = (sourceOrderId: string) =>
  Buffer.from(JSON.stringify(buildFulfillmentPayload('custom', { orderId: sourceOrderId, trackingNumbers: [`TRK${unique()}`], company: 'UPS' })));

beforeAll(async () => {
  sandbox = await startSandbox();
  service = await startTestService({ PLATFORM_BASE_URL: sandbox.baseUrlTemplate, SYNC_RETRY_BASE_DELAY_MS: '100' });
  ledger.watch('in-process service', () => service.logs);
  client = new ChaosClient(service.url);
  token = (await registerUser(client)).token;
  reseller = await createReseller(client, token);
  other = await createReseller(client, token);
  suppliers = [await createSupplier(client, token, reseller.id, { platform: 'custom' }), await createSupplier(client, token, reseller.id, { platform: 'custom' })];

  const first = await post(signed(ORDERS, orderBody(777_001), reseller.shopDomain, reseller.webhookSecret));
  expect(first.status, first.text).toBe(200);
  const jobs = await waitFor(async () => {
    const rows = await queryRows<{ source_store_id: string; source_order_id: string; status: string }>(service.databaseUrl, `select source_store_id, source_order_id, status from sync_jobs`);
    return rows.length === 2 && rows.every((row) => row.status === 'completed') ? rows : null;
  }, 20_000, 'the first order placed');
  placed = suppliers.map((supplier) => ({ supplier, sourceOrderId: jobs.find((job) => job.source_store_id === supplier.id)!.source_order_id }));
});

afterAll(async () => {
  await service?.stop();
  ledger.flush();
  await sandbox?.close();
});

/** A delivery, genuine until the property spoils it. */
const genuine = fc.oneof(
  fc.integer({ min: 1, max: 9_999_999 }).map((id) => ({ kind: 'order' as const, make: () => signed(ORDERS, orderBody(id), reseller.shopDomain, reseller.webhookSecret) })),
  fc.nat(1).map((i) => ({
    kind: 'fulfillment' as const,
    make: () => signed(FULFILLMENTS, fulfillmentBody(placed[i]!.sourceOrderId), placed[i]!.supplier.shopDomain, placed[i]!.supplier.webhookSecret),
  })),
);

type Forgery = (delivery: Delivery) => void;

const forgeries: fc.Arbitrary<{ label: string; forge: Forgery }> = fc.oneof(
  fc.constant({ label: 'no signature', forge: (d: Delivery) => void delete d.headers['x-platform-hmac-sha256'] }),
  fc.constant({ label: 'empty signature', forge: (d: Delivery) => void (d.headers['x-platform-hmac-sha256'] = '') }),
  fc.uint8Array({ minLength: 0, maxLength: 64 }).map((bytes) => ({ label: 'random signature', forge: (d: Delivery) => void (d.headers['x-platform-hmac-sha256'] = Buffer.from(bytes).toString('base64')) })),
  fc.string({ minLength: 1, maxLength: 40 }).map((secret) => ({ label: 'signed with a guessed secret', forge: (d: Delivery) => void (d.headers['x-platform-hmac-sha256'] = signPayload(d.body, secret)) })),
  fc.constant({ label: "signed with another store's secret", forge: (d: Delivery) => void (d.headers['x-platform-hmac-sha256'] = signPayload(d.body, other.webhookSecret)) }),
  fc.constant({ label: "another store's domain", forge: (d: Delivery) => void (d.headers['x-platform-shop-domain'] = other.shopDomain) }),
  fc.constant({ label: 'no shop domain', forge: (d: Delivery) => void delete d.headers['x-platform-shop-domain'] }),
  fc.string({ maxLength: 60 }).map((domain) => ({ label: 'unknown shop domain', forge: (d: Delivery) => void (d.headers['x-platform-shop-domain'] = `${domain.replace(/[^\x20-\x7e]/g, '')}.unknown.example`) })),
  fc.constant({ label: 'signature truncated', forge: (d: Delivery) => void (d.headers['x-platform-hmac-sha256'] = d.headers['x-platform-hmac-sha256']!.slice(0, -4)) }),
  fc.constant({ label: 'signature as hex', forge: (d: Delivery) => void (d.headers['x-platform-hmac-sha256'] = Buffer.from(d.headers['x-platform-hmac-sha256']!, 'base64').toString('hex')) }),
);

const tamperings: fc.Arbitrary<{ label: string; tamper: (body: Buffer) => Buffer }> = fc.oneof(
  fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })).map(([at, xor]) => ({
    label: `byte flipped (${at}, ${xor})`,
    tamper: (body: Buffer) => {
      const copy = Buffer.from(body);
      copy[at % copy.length] = copy[at % copy.length]! ^ xor;
      return copy;
    },
  })),
  fc.nat().map((at) => ({ label: 'byte removed', tamper: (body: Buffer) => Buffer.concat([body.subarray(0, at % body.length), body.subarray((at % body.length) + 1)]) })),
  fc.constantFrom(' ', '\n', '\u0000', 'x').map((extra) => ({ label: `appended ${JSON.stringify(extra)}`, tamper: (body: Buffer) => Buffer.concat([body, Buffer.from(extra)]) })),
  fc.constant({ label: 're-serialised with other whitespace (same JSON)', tamper: (body: Buffer) => Buffer.from(JSON.stringify(JSON.parse(body.toString()), null, 1)) }),
  fc.constant({ label: 'quantity raised', tamper: (body: Buffer) => Buffer.from(body.toString().replace(/"quantity":1/, '"quantity":100')) }),
  fc.constant({ label: 'order id changed', tamper: (body: Buffer) => Buffer.from(body.toString().replace(/"id":(\d)/, '"id":9$1')) }),
);

describe('webhook deliveries nobody should trust', () => {
  it('refuses forged deliveries with 401 invalid_signature and creates nothing', async () => {
    const before = await footprint();
    await fc.assert(
      fc.asyncProperty(genuine, forgeries, async (base, { forge }) => {
        const delivery = base.make();
        forge(delivery);
        const response = await post(delivery);
        expect(response.status, response.text).toBe(401);
        expect(response.body.error.code).toBe('invalid_signature');
      }),
      { numRuns: 80 },
    );
    expect(await footprint()).toEqual(before);
  });

  it('refuses tampered deliveries (any change to the signed bytes) and creates nothing', async () => {
    const before = await footprint();
    await fc.assert(
      fc.asyncProperty(genuine, tamperings, async (base, { tamper }) => {
        const delivery = base.make();
        const body = tamper(delivery.body);
        fc.pre(!body.equals(delivery.body));
        const response = await post({ ...delivery, body });
        expect(response.status, response.text).toBe(401);
        expect(response.body.error.code).toBe('invalid_signature');
      }),
      { numRuns: 80 },
    );
    expect(await footprint()).toEqual(before);
  });

  it('answers replays of an accepted delivery as the first time, and creates nothing more', async () => {
    const make = (kind: 'order' | 'fulfillment', seed: number) =>
      kind === 'order'
        ? signed(ORDERS, orderBody(1_000_000 + seed), reseller.shopDomain, reseller.webhookSecret)
        : signed(FULFILLMENTS, fulfillmentBody(placed[seed % 2]!.sourceOrderId), placed[seed % 2]!.supplier.shopDomain, placed[seed % 2]!.supplier.webhookSecret);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom<'order' | 'fulfillment'>('order', 'fulfillment'), fc.nat(999_999), fc.integer({ min: 1, max: 6 }), fc.boolean(), async (kind, seed, copies, sameWebhookId) => {
        const delivery = make(kind, seed);
        const first = await post(delivery);
        expect(first.status, first.text).toBe(200);
        // Let what the first delivery set off settle before measuring.
        await waitFor(async () => {
          const [row] = await queryRows<{ open: string }>(service.databaseUrl, `select count(*) as open from pgboss.job where state not in ('completed', 'failed', 'cancelled')`);
          return Number(row!.open) === 0;
        }, 20_000, 'the first delivery processed');
        const after = await footprint();
        // A replay is the signed body again, with the same webhook id or (the signature does not cover headers) any other.
        const replays = await Promise.all(
          Array.from({ length: copies }, () =>
            post({ ...delivery, headers: { ...delivery.headers, 'x-platform-webhook-id': sameWebhookId ? delivery.headers['x-platform-webhook-id']! : `wh-${unique()}` } }),
          ),
        );
        for (const replay of replays) {
          expect(replay.status, replay.text).toBe(200);
          expect(replay.body.syncJobIds).toEqual(first.body.syncJobIds);
        }
        expect(await footprint()).toEqual(after);
      }),
      {
        numRuns: 8,
        examples: [
          ['order', 1, 3, true],
          ['order', 2, 3, false],
          ['fulfillment', 3, 3, true],
          ['fulfillment', 4, 3, false],
        ],
      },
    );
  });

  it('refuses bodies over 1 MiB with 413, signed or not, and creates nothing', async () => {
    const before = await footprint();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(ORDERS, FULFILLMENTS),
        fc.integer({ min: 1024 * 1024 + 1, max: 4 * 1024 * 1024 }),
        fc.boolean(),
        async (path, size, sign) => {
          const padding = 'x'.repeat(size);
          const body = Buffer.from(JSON.stringify({ ...JSON.parse(orderBody(991_000).toString()), note: padding }));
          const delivery = path === ORDERS ? signed(ORDERS, body, reseller.shopDomain, reseller.webhookSecret) : signed(FULFILLMENTS, body, suppliers[0]!.shopDomain, suppliers[0]!.webhookSecret);
          if (!sign) delete delivery.headers['x-platform-hmac-sha256'];
          const response = await post(delivery);
          expect(response.status, response.text.slice(0, 200)).toBe(413);
          expect(response.body.error.code).toBe('payload_too_large');
        },
      ),
      { numRuns: 6 },
    );
    expect(await footprint()).toEqual(before);
  });
});

itLeaksNoSecret();
