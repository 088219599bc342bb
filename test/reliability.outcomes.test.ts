/**
 * No answer a platform can give makes recording an outcome fail (issue 13, items 1 and 6). Each
 * sandbox mode below is a real supplier answer that used to strand its job: the outcome's write
 * failed, the batch was thrown, pg-boss redelivered it 20 times (attempts up to 21, the supplier
 * called each time) and the job stayed `processing` forever. A token echoed by the supplier leaked
 * into errorMessage, the audit log and the logs when it had repeated whitespace or was long.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect } from 'vitest';
import type { Faults } from './sandbox/server.ts';
import { queryRows } from './support/database.ts';
import { test } from './support/fixtures.ts';
import { addSupplier, auditOf, createJob, lineOf, messagesOfJob, openShop, orderPosts, queueMessage, seedResellerOrder, settled } from './support/sync-jobs.ts';

const hasLoneSurrogate = (text: string) => text !== text.toWellFormed();

const it = test
  /** A shop with one supplier (custom platform unless told) answering with `faults`, and a job for it. */
  .extend('jobFor', { scope: 'file' }, ({ api, sandbox }) => async (faults: Faults, supplierOverrides: Record<string, unknown> = {}) => {
    const shop = await openShop(api);
    const supplier = await addSupplier(api, shop, { vendorTag: 'Acme', ...supplierOverrides });
    sandbox.setFaults(supplier.shopDomain, faults);
    const orderId = seedResellerOrder(sandbox, shop, [lineOf('Acme')]);
    const job = await createJob(api, shop.user.token, supplier.id, orderId);
    return { shop, supplier, job };
  })
  /** What the job's row and its audit entries hold, as stored. */
  .extend('stored', { scope: 'file' }, ({ service }) => async (jobId: string) => {
    const [row] = await queryRows<{ status: string; attempts: number; error_message: string | null; source_order_id: string | null }>(
      service.databaseUrl,
      'select status, attempts, error_message, source_order_id from sync_jobs where id = $1',
      [jobId],
    );
    const audit = await queryRows<{ action: string; metadata: Record<string, unknown> }>(
      service.databaseUrl,
      'select action, metadata from audit_entries where resource_id = $1 order by id',
      [jobId],
    );
    return { row: row!, audit };
  });

describe('error texts a supplier answers with', () => {
  it('a 422 whose error text carries a NUL: the attempts fail as the policy says, the error kept without the NUL', async ({ api, sandbox, jobFor, stored }) => {
    const { shop, supplier, job } = await jobFor({ nulErrorNext: 4 });
    const dead = await settled(api, shop.user.token, job.id);
    expect(dead).toMatchObject({ status: 'dead', attempts: 4, sourceOrderId: null });
    expect(dead.errorMessage).toContain('422');
    expect(dead.errorMessage).toContain('sku A-1 is not a valid sku');
    expect(dead.errorMessage).not.toContain('\u0000');
    expect(orderPosts(sandbox, supplier.shopDomain)).toHaveLength(4);
    expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(0);
    const { audit } = await stored(job.id);
    expect(audit.map((entry) => entry.action)).toEqual(['sync_job.created', 'sync_job.dead']);
    expect(audit[1]!.metadata.errorMessage).toBe(dead.errorMessage);
  });

  it('an error text with an emoji where the detail is cut: kept whole, never cut between its halves', async ({ service, api, sandbox, jobFor }) => {
    const { shop, supplier, job } = await jobFor({ splitEmojiErrorNext: 1 });
    const done = await settled(api, shop.user.token, job.id);
    expect(done).toMatchObject({ status: 'completed', attempts: 2, errorMessage: null });
    expect(orderPosts(sandbox, supplier.shopDomain).map((post) => post.status)).toEqual([422, 201]);
    expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(1);
    // The failure was recorded and retried under the policy, not redelivered by the queue.
    expect(done.failedAt).not.toBeNull();
    const [first] = await messagesOfJob(service.databaseUrl, job.id);
    expect(await queueMessage(service.databaseUrl, first!.id)).toMatchObject({ state: 'completed', retry_count: 0 });
  });

  it('the same emoji on every attempt: dead after 4, with a well-formed error cut after the emoji', async ({ api, sandbox, jobFor, stored }) => {
    const { shop, supplier, job } = await jobFor({ splitEmojiErrorNext: 4 });
    const dead = await settled(api, shop.user.token, job.id);
    expect(dead).toMatchObject({ status: 'dead', attempts: 4 });
    expect(hasLoneSurrogate(dead.errorMessage)).toBe(false);
    // Cut on code points: the emoji at character 299 is whole, and the ellipsis follows it.
    expect(dead.errorMessage).toMatch(/x{298}\u{1F4E6}…$/u);
    expect(orderPosts(sandbox, supplier.shopDomain)).toHaveLength(4);
    const { audit } = await stored(job.id);
    expect(audit[1]!.metadata.errorMessage).toBe(dead.errorMessage);
  });
});

describe('order ids a supplier answers with', () => {
  it.for(['oversized', 'nul'] as const)('a %s order id is a failed attempt with a clear error; one order, never a second', async (kind, { api, sandbox, jobFor, stored }) => {
    const { shop, supplier, job } = await jobFor({ unkeepableOrderIds: kind });
    const dead = await settled(api, shop.user.token, job.id);
    expect(dead).toMatchObject({ status: 'dead', attempts: 4, sourceOrderId: null });
    expect(dead.errorMessage).toContain('answered 201 with an unexpected body');
    expect(dead.errorMessage).toContain('expected an id the service can keep');
    expect(dead.errorMessage).not.toContain('\u0000');
    // Placed once, then the same order given back to every retry (Idempotency-Key).
    expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(1);
    expect(orderPosts(sandbox, supplier.shopDomain).map((post) => post.idempotentReplay)).toEqual([false, true, true, true]);
    expect((await stored(job.id)).row).toMatchObject({ status: 'dead', attempts: 4, source_order_id: null });
  });
});

describe('a token the supplier echoes', () => {
  /** 12-character pieces of the token, as sent and with its whitespace collapsed: none may be kept anywhere. */
  function fragmentsOf(token: string): string[] {
    const fragments = new Set<string>();
    for (const form of [token, token.replace(/\s+/g, ' ')]) {
      for (let i = 0; i + 12 <= form.length; i++) fragments.add(form.slice(i, i + 12));
    }
    return [...fragments];
  }

  const hex = (bytes: number) => randomBytes(bytes).toString('hex');
  const tokens = {
    'with repeated whitespace': () => `sup_${hex(8)}  ${hex(8)}   ${hex(8)}`,
    'longer than the detail kept (400 characters)': () => `sup_${hex(198)}`,
  };

  it.for(
    (['raw', 'unicode-escaped', 'url-encoded', 'base64'] as const).flatMap((form) =>
      Object.entries(tokens).map(([shape, make]) => ({ form, shape, make })),
    ),
  )('$shape, echoed $form: redacted from errorMessage, the audit log and the logs', async ({ form, make }, { service, api, sandbox, jobFor, stored }) => {
    const token = make();
    const { shop, supplier, job } = await jobFor({ echoToken: form }, { accessToken: token });
    const dead = await settled(api, shop.user.token, job.id);
    expect(dead).toMatchObject({ status: 'dead', attempts: 4 });
    expect(dead.errorMessage).toContain('answered 401');
    expect(dead.errorMessage).toContain('[redacted]');
    expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(0);

    const { audit } = await stored(job.id);
    const kept = [dead.errorMessage, JSON.stringify(audit), JSON.stringify(await auditOf(api, shop.user.token, job.id)), ...service.logs].join('\n');
    const leaked = fragmentsOf(token).filter((fragment) => kept.includes(fragment));
    expect(leaked).toEqual([]);
    for (const encoded of [encodeURIComponent(token), Buffer.from(token).toString('base64').slice(0, 40)]) expect(kept).not.toContain(encoded);
  });

  it('a 422 quoting the first 200 characters of a 391-character token: no run of it is kept', async ({ service, api, jobFor, stored }) => {
    const token = `sup_${hex(193)}a`;
    expect(token).toHaveLength(391);
    const { shop, job } = await jobFor({ echoToken: 'prefix' }, { accessToken: token });
    const dead = await settled(api, shop.user.token, job.id);
    expect(dead).toMatchObject({ status: 'dead', attempts: 4 });
    expect(dead.errorMessage).toContain('answered 422');
    expect(dead.errorMessage).toContain('[redacted]');

    const { audit } = await stored(job.id);
    const kept = [dead.errorMessage, JSON.stringify(audit), JSON.stringify(await auditOf(api, shop.user.token, job.id)), ...service.logs].join('\n');
    expect(fragmentsOf(token).filter((fragment) => kept.includes(fragment))).toEqual([]);
  });
});
