/**
 * The ingest baseline: a bare node:http server written for the benchmark. It verifies the webhook
 * HMAC over the raw bytes exactly as the service does, parses the order, and inserts the rows the
 * service writes for an order routed to two suppliers (two sync jobs, their two pg-boss messages
 * and two audit entries) in one transaction, into the same PostgreSQL server and the same tables.
 * No framework, no ORM, no store look-up: the secret and the store ids are given.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import pg from 'pg';
import { MAX_AUTO_RETRIES } from '../machines/attempt.machine.ts';
import { syncJobKind } from '../src/sync-jobs/kind.ts';
import { newId } from '../src/shared/ids.ts';
import { verifySignature } from '../src/webhooks/signature.ts';

const env = process.env as Record<string, string>;
const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: Number(env.POOL_MAX ?? 10) });
const secret = env.WEBHOOK_SECRET!;
const ownerId = env.OWNER_ID!;
const resellerStoreId = env.RESELLER_STORE_ID!;
const sourceStoreIds = env.SOURCE_STORE_IDS!.split(',');
const queueName = syncJobKind.queue.name;

async function ingest(order: { id: number | string }, webhookId: string): Promise<string[]> {
  const externalOrderId = String(order.id);
  const now = new Date();
  const jobs = sourceStoreIds.map((sourceStoreId) => ({ id: newId('syncJob'), sourceStoreId, messageId: randomUUID() }));
  const client = await pool.connect();
  try {
    await client.query('begin');
    await client.query(
      `insert into sync_jobs (id, owner_id, reseller_store_id, source_store_id, external_order_id, origin, status, attempts,
         retries_left, "order", queue_message_id, version, created_at, updated_at)
       select j.id, $1, $2, j.source_store_id, $3, 'webhook', 'pending', 0, $4, $5::jsonb, j.message_id, 1, $6, $6
       from unnest($7::text[], $8::text[], $9::text[]) as j(id, source_store_id, message_id)`,
      [ownerId, resellerStoreId, externalOrderId, MAX_AUTO_RETRIES, JSON.stringify(order), now, jobs.map((j) => j.id), jobs.map((j) => j.sourceStoreId), jobs.map((j) => j.messageId)],
    );
    await client.query(
      `insert into pgboss.job (id, name, data, retry_limit, retry_delay, retry_backoff, retry_delay_max, expire_seconds, deletion_seconds, heartbeat_seconds)
       select m.id::uuid, $1, jsonb_build_object('syncJobId', m.job_id), 20, 1, true, 60, 900, 86400, 10
       from unnest($2::text[], $3::text[]) as m(id, job_id)`,
      [queueName, jobs.map((j) => j.messageId), jobs.map((j) => j.id)],
    );
    await client.query(
      `insert into audit_entries (id, owner_id, reseller_store_id, action, resource_type, resource_id, metadata, actor_id, created_at)
       select a.id, $1, $2, 'sync_job.created', 'sync_job', a.job_id, jsonb_build_object('externalOrderId', $3::text, 'sourceStoreId', a.source_store_id, 'origin', 'webhook', 'webhookId', $4::text), 'system', $5
       from unnest($6::text[], $7::text[], $8::text[]) as a(id, job_id, source_store_id)`,
      [ownerId, resellerStoreId, externalOrderId, webhookId, now, jobs.map(() => newId('auditEntry')), jobs.map((j) => j.id), jobs.map((j) => j.sourceStoreId)],
    );
    await client.query('commit');
    return jobs.map((j) => j.id);
  } catch (error) {
    await client.query('rollback').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

function reply(response: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

const server = http.createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const raw = Buffer.concat(chunks);
    const signature = request.headers['x-platform-hmac-sha256'];
    if (typeof signature !== 'string' || !verifySignature(raw, secret, signature)) return reply(response, 401, { error: 'invalid_signature' });
    let order: { id: number | string };
    try {
      order = JSON.parse(raw.toString('utf8')) as { id: number | string };
    } catch {
      return reply(response, 400, { error: 'validation_failed' });
    }
    ingest(order, String(request.headers['x-platform-webhook-id'] ?? '')).then(
      (syncJobIds) => reply(response, 200, { received: true, syncJobIds }),
      (error: unknown) => {
        console.error(error);
        reply(response, 500, { error: 'internal' });
      },
    );
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(env.PORT), '127.0.0.1', () => console.log(`baseline listening on ${env.PORT}`));

process.once('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void pool.end().then(() => process.exit(0));
});
