import { ipKeyGenerator } from 'express-rate-limit';
import type { SharedCounters, WindowCount } from '../rate-limits/repository.ts';

const WINDOW_MS = 60_000;

/**
 * A scan of at most this many secrets (beyond the proven senders, which are always tried) costs no
 * more than those do, so no other claim's failures are a reason to refuse it.
 */
export const CHEAP_SCAN_SECRETS = 8;

/**
 * The failed-signature budget of the shared fulfillment webhook for one delivery: what a failure
 * costs is charged to what the delivery claims (its shop domain) from its client, never to the
 * client as a whole, because a platform sends every tenant's webhooks from the same few addresses.
 *
 * - The claim (domain and client): `limit` failures a window. Past them, that domain from that
 *   client has only its first proven senders tried (src/webhooks/source-secrets.ts), and a delivery
 *   none of them signed gets 429.
 * - The client: `limit` failing claims (distinct domains) a window, each counted at its first
 *   failure. Past them, a claim of that client with no failure of its own this window is refused
 *   429 without a look at the secrets when trying them would cost more than the proven senders do
 *   (a domain given many records), or when no record has the domain at all. A client spraying
 *   forgeries over many domains is throttled, while one tenant's failures, however many, spend the
 *   budget of its own domain and one claim of the client's: another domain's correctly signed
 *   delivery from the same platform address is still checked.
 */
export class SignatureBudget {
  readonly #claim: string;
  readonly #client: string;
  /** When the budget that refused a scan has room again. */
  retryAfterSeconds = 1;

  constructor(
    private readonly counters: SharedCounters,
    private readonly limit: number,
    shopDomain: string,
    client: string | undefined,
  ) {
    // An IPv6 client by its /64 (one subscriber's network, any address of which a single host can use).
    const sender = client ? ipKeyGenerator(client, 64) : 'unknown';
    this.#claim = `signature:domain:${shopDomain}:client:${sender}`;
    this.#client = `signature:claims:client:${sender}`;
  }

  /**
   * Whether a delivery that none of the domain's first proven senders signed may be checked
   * against `secrets` more (Infinity: a domain no record ever had, where nothing can verify it).
   */
  async mayScan(secrets: number): Promise<boolean> {
    const counts = await this.counters.current([this.#claim, this.#client]);
    const claim = counts.find((count) => count.key === this.#claim);
    const client = counts.find((count) => count.key === this.#client);
    if (claim && claim.hits >= this.limit) return this.#refuse(claim);
    // A claim already counted among the client's, or a cheap one: its own budget alone decides.
    if ((claim && claim.hits > 0) || secrets <= CHEAP_SCAN_SECRETS) return true;
    if (client && client.hits >= this.limit) return this.#refuse(client);
    return true;
  }

  /** Counts a failure on the claim, and the claim on the client when it is its first failure this window. */
  async charge(): Promise<void> {
    const [claim] = await this.counters.hit([this.#claim], WINDOW_MS);
    if (claim?.hits === 1) await this.counters.hit([this.#client], WINDOW_MS);
  }

  #refuse(spent: WindowCount): false {
    this.retryAfterSeconds = Math.max(1, Math.ceil((spent.resetsAtMs - Date.now()) / 1000));
    return false;
  }
}
