import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP relay between one process and PostgreSQL that the test can cut: `freeze()` stops every byte
 * in both directions (a network partition, or a process stopped dead) without closing a socket, so
 * the process neither completes nor fails anything on the database; `thaw()` lets the buffered
 * bytes through. Connections opened while frozen wait too. `cut()` is the database going away
 * instead: every connection is closed and new ones are closed as they arrive, until `restore()`.
 */
export class DbLink {
  private readonly pairs: { client: Socket; upstream: Socket | null }[] = [];
  private frozen = false;
  private down = false;

  private constructor(
    private readonly server: Server,
    private readonly target: { host: string; port: number },
    readonly databaseUrl: string,
  ) {}

  /** A link to the database at `databaseUrl`; `link.databaseUrl` connects through it. */
  static async open(databaseUrl: string): Promise<DbLink> {
    const url = new URL(databaseUrl);
    const target = { host: url.hostname, port: Number(url.port) };
    let link: DbLink | undefined;
    const server = createServer((client) => link!.accept(client));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url.port = String((server.address() as AddressInfo).port);
    link = new DbLink(server, target, url.toString());
    return link;
  }

  private accept(client: Socket): void {
    if (this.down) {
      client.destroy();
      return;
    }
    const pair: { client: Socket; upstream: Socket | null } = { client, upstream: null };
    this.pairs.push(pair);
    client.on('error', () => pair.upstream?.destroy());
    client.pause();
    if (!this.frozen) this.join(pair);
  }

  private join(pair: { client: Socket; upstream: Socket | null }): void {
    if (!pair.upstream) {
      pair.upstream = connect(this.target);
      pair.upstream.on('error', () => pair.client.destroy());
      pair.upstream.on('close', () => pair.client.destroy());
      pair.client.on('close', () => pair.upstream?.destroy());
    }
    pair.client.pipe(pair.upstream);
    pair.upstream.pipe(pair.client);
  }

  freeze(): void {
    this.frozen = true;
    for (const { client, upstream } of this.pairs) {
      client.unpipe();
      client.pause();
      upstream?.unpipe();
      upstream?.pause();
    }
  }

  thaw(): void {
    this.frozen = false;
    for (const pair of this.pairs) if (!pair.client.destroyed) this.join(pair);
  }

  /** The database is gone for the process: its connections close, and new ones close at once. */
  cut(): void {
    this.down = true;
    for (const { client, upstream } of this.pairs.splice(0)) {
      client.destroy();
      upstream?.destroy();
    }
  }

  /** The database is back: new connections go through again. */
  restore(): void {
    this.down = false;
  }

  async close(): Promise<void> {
    for (const { client, upstream } of this.pairs) {
      client.destroy();
      upstream?.destroy();
    }
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
