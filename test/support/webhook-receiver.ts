/**
 * An integrator's webhook receiver: a real node:http server on loopback that verifies every
 * delivery with the stock `standardwebhooks` package (no code of ours), records it, and answers as
 * each test tells it to (a status, a delay, a redirect, a large body, never).
 */
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface ReceivedDelivery {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The event, parsed by `Webhook.verify`; null when no known secret verified the delivery. */
  event: { id: string; type: string; createdAt: string; resellerStoreId: string | null; data: { object: any } } | null;
  /** Which of the path's secrets verified it (index into `secrets`), each alone. */
  verifiedBy: number[];
  receivedAt: number;
  /** Whether the whole answer was written before the connection closed (the sender may stop reading). */
  answered?: boolean;
  /** When the connection of this request closed. */
  closedAt?: number;
}

export interface Behaviour {
  status?: number;
  /** Answer after this long. */
  delayMs?: number;
  /** Never answer (the request is left hanging until the sender gives up). */
  hang?: boolean;
  headers?: Record<string, string>;
  body?: string;
  /** Answer with this many bytes of body instead of `body`. */
  bodyBytes?: number;
}

export class WebhookReceiver {
  readonly deliveries: ReceivedDelivery[] = [];
  private readonly secrets = new Map<string, string[]>();
  private readonly behaviours = new Map<string, Behaviour | ((delivery: ReceivedDelivery) => Behaviour)>();
  private readonly hanging = new Set<ServerResponse>();

  private constructor(private readonly server: Server) {}

  static async start(): Promise<WebhookReceiver> {
    const server = createServer();
    const receiver = new WebhookReceiver(server);
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => receiver.receive(req.url ?? '/', req.headers, Buffer.concat(chunks).toString('utf8'), res));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return receiver;
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** A URL of this receiver, with the secrets its deliveries must verify with (several during a rotation). */
  url(path: string, secrets: string[] = []): string {
    this.secrets.set(path, secrets);
    return `${this.baseUrl}${path}`;
  }

  trust(path: string, secrets: string[]): void {
    this.secrets.set(path, secrets);
  }

  behave(path: string, behaviour: Behaviour | ((delivery: ReceivedDelivery) => Behaviour)): void {
    this.behaviours.set(path, behaviour);
  }

  at(path: string): ReceivedDelivery[] {
    return this.deliveries.filter((delivery) => delivery.path === path);
  }

  /** Answers every request left hanging, so the server can close. */
  releaseHanging(): void {
    for (const res of this.hanging) res.destroy();
    this.hanging.clear();
  }

  async close(): Promise<void> {
    this.releaseHanging();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private receive(path: string, headers: IncomingHttpHeaders, body: string, res: ServerResponse): void {
    const secrets = this.secrets.get(path) ?? [];
    const verifiedBy: number[] = [];
    let event: ReceivedDelivery['event'] = null;
    secrets.forEach((secret, index) => {
      try {
        event = new Webhook(secret).verify(body, headers as Record<string, string>) as ReceivedDelivery['event'];
        verifiedBy.push(index);
      } catch {
        // Not signed with this secret.
      }
    });
    const delivery: ReceivedDelivery = { path, headers, body, event, verifiedBy, receivedAt: Date.now() };
    this.deliveries.push(delivery);
    res.on('close', () => {
      delivery.answered = res.writableFinished;
      delivery.closedAt = Date.now();
    });
    const configured = this.behaviours.get(path);
    const behaviour = (typeof configured === 'function' ? configured(delivery) : configured) ?? {};
    if (behaviour.hang) {
      this.hanging.add(res);
      return;
    }
    const answer = () => {
      res.writeHead(behaviour.status ?? 200, { 'content-type': 'text/plain', ...behaviour.headers });
      res.end(behaviour.bodyBytes !== undefined ? Buffer.alloc(behaviour.bodyBytes, 'x') : (behaviour.body ?? 'ok'));
    };
    if (behaviour.delayMs) setTimeout(answer, behaviour.delayMs);
    else answer();
  }
}
