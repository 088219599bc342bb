/**
 * The open-loop load generator, run in its own process by bench/run.ts: sends signed
 * orders/create (or orders/cancelled) webhooks on a fixed schedule (`rate` per second), whether or not earlier ones were
 * answered, and writes when each was sent and what the service answered to `outFile`.
 */
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { orderTemplate, webhookHeaders, type StorefrontTopic } from './common.ts';

export interface OpenLoopInput {
  url: string;
  rate: number;
  seconds: number;
  startId: number;
  outFile: string;
  /** orders/create unless said; orders/cancelled sends the cancellation of the same order ids. */
  topic?: StorefrontTopic;
  /** Also sends each order's orders/cancelled this many ms after the order, recorded in `cancelOutFile`. */
  cancelAfterMs?: number;
  cancelOutFile?: string;
}

export interface SentOrder {
  orderId: number;
  sentAt: number;
  answeredAt: number | null;
  status: number | null;
  syncJobIds: string[];
}

export interface OpenLoopResult {
  sent: number;
  ok: number;
  failed: number;
  firstSentAt: number;
  lastSentAt: number;
  /** How far the sender fell behind its schedule at worst, in ms (a sanity check of open loop). */
  maxLagMs: number;
  /** Answers by HTTP status ('no answer' for a timeout or a dropped connection). */
  outcomes: Record<string, number>;
}

const input = JSON.parse(process.argv[2] ?? '{}') as OpenLoopInput;
const topic = input.topic ?? 'orders/create';
const templates = new Map<StorefrontTopic, ReturnType<typeof orderTemplate>>([[topic, orderTemplate(topic)], ['orders/cancelled', orderTemplate('orders/cancelled')]]);
const target = new URL('/v1/orders/webhook', input.url);
const agent = new http.Agent({ keepAlive: true, maxSockets: 512 });
const total = Math.round(input.rate * input.seconds);
const expectedAnswers = input.cancelAfterMs === undefined ? total : 2 * total;
const sent: SentOrder[] = [];
const cancels: SentOrder[] = [];
let answered = 0;
let maxLagMs = 0;

function send(orderId: number, sentTopic: StorefrontTopic = topic, records: SentOrder[] = sent): void {
  const { body, signature } = templates.get(sentTopic)!.render(orderId);
  const record: SentOrder = { orderId, sentAt: Date.now(), answeredAt: null, status: null, syncJobIds: [] };
  records.push(record);
  const webhookId = `bench-${sentTopic === 'orders/create' ? 'e2e' : 'cancel'}-${orderId}`;
  const request = http.request(
    target,
    { method: 'POST', agent, headers: { ...webhookHeaders(signature, webhookId, sentTopic), 'content-length': Buffer.byteLength(body) } },
    (response) => {
      let text = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      response.on('end', () => {
        record.answeredAt = Date.now();
        record.status = response.statusCode ?? null;
        try {
          record.syncJobIds = (JSON.parse(text) as { syncJobIds?: string[] }).syncJobIds ?? [];
        } catch {
          // An error body; the status says enough.
        }
        done();
      });
    },
  );
  request.setTimeout(30_000, () => request.destroy(new Error('timeout')));
  request.on('error', () => {
    record.answeredAt = Date.now();
    done();
  });
  request.end(body);
  if (sentTopic === topic && input.cancelAfterMs !== undefined) setTimeout(() => send(orderId, 'orders/cancelled', cancels), input.cancelAfterMs);
}

let finish: () => void;
const finished = new Promise<void>((resolve) => (finish = resolve));
function done(): void {
  if (++answered === expectedAnswers) finish();
}

const start = performance.now();
let issued = 0;
const tick = () => {
  const elapsed = performance.now() - start;
  const due = Math.min(total, Math.floor((elapsed / 1000) * input.rate) + 1);
  if (due > issued + 1) maxLagMs = Math.max(maxLagMs, ((due - issued - 1) / input.rate) * 1000);
  while (issued < due) send(input.startId + issued++);
  if (issued < total) setTimeout(tick, Math.max(0, ((issued / input.rate) * 1000) - (performance.now() - start)));
};
tick();
await finished;
agent.destroy();

writeFileSync(input.outFile, JSON.stringify(sent));
if (input.cancelOutFile) writeFileSync(input.cancelOutFile, JSON.stringify(cancels));
const result: OpenLoopResult = {
  sent: sent.length,
  ok: sent.filter((order) => order.status === 200).length,
  failed: sent.filter((order) => order.status !== 200).length,
  firstSentAt: sent[0]?.sentAt ?? 0,
  lastSentAt: sent.at(-1)?.sentAt ?? 0,
  maxLagMs: Math.round(maxLagMs),
  outcomes: sent.reduce<Record<string, number>>((counts, order) => {
    const key = order.status === null ? 'no answer' : String(order.status);
    counts[key] = (counts[key] ?? 0) + 1;
    return counts;
  }, {}),
};
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
