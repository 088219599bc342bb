/**
 * The closed-loop load generator, run in its own process by bench/run.ts: autocannon with a fixed
 * number of connections. Orders mode signs a distinct orders/create webhook for every request;
 * get mode repeats one GET. Prints one JSON line with the result.
 */
import autocannon from 'autocannon';
import { orderTemplate, webhookHeaders } from './common.ts';

export interface LoadInput {
  url: string;
  mode: 'orders' | 'get';
  path: string;
  connections: number;
  /** Measured run; omitted when `amount` is given. */
  durationSeconds?: number;
  /** Stop after this many requests instead of a duration. */
  amount?: number;
  warmupSeconds?: number;
  /** First order id (orders mode); each request takes the next one. */
  startId?: number;
  headers?: Record<string, string>;
}

export interface LoadResult {
  requests: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  durationSeconds: number;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  nextId: number;
}

const input = JSON.parse(process.argv[2] ?? '{}') as LoadInput;
const template = orderTemplate();
let nextId = input.startId ?? 1;

function request(): autocannon.Request {
  if (input.mode === 'get') return { method: 'GET', path: input.path, headers: input.headers ?? {} };
  return {
    method: 'POST',
    path: input.path,
    setupRequest: (req) => {
      const orderId = nextId++;
      const { body, signature } = template.render(orderId);
      return { ...req, body, headers: { ...webhookHeaders(signature, `bench-${orderId}`) } };
    },
  };
}

function run(options: { durationSeconds?: number; amount?: number }): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: input.url,
        connections: input.connections,
        ...(options.amount !== undefined ? { amount: options.amount } : { duration: options.durationSeconds ?? 10 }),
        requests: [request()],
        timeout: 30,
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
    instance.on('error', reject);
  });
}

if (input.warmupSeconds) await run({ durationSeconds: input.warmupSeconds });
const result = await run(input.amount !== undefined ? { amount: input.amount } : { durationSeconds: input.durationSeconds ?? 10 });
const ok = result['2xx'];
const output: LoadResult = {
  requests: result.requests.total,
  ok,
  non2xx: result.non2xx,
  errors: result.errors,
  timeouts: result.timeouts,
  durationSeconds: result.duration,
  rps: ok / result.duration,
  p50: result.latency.p50,
  p90: result.latency.p90,
  p99: result.latency.p99,
  max: result.latency.max,
  nextId,
};
process.stdout.write(`${JSON.stringify(output)}\n`);
process.exit(0);
