import type { Metrics } from '../metrics/index.ts';
import type { SecretBox } from '../shared/secrets.ts';
import type { SourceStoreReads } from './ports.ts';
import type { SourceStore } from '../source-stores/entity.ts';
import { verifySignature } from './signature.ts';

/** A supplier domain's active source stores, grouped by their decrypted webhook secret. */
interface DomainSecrets {
  version: number;
  /** Each distinct secret with the records that share it (one supplier store's secret can serve several resellers). */
  bySecret: Map<string, SourceStore[]>;
  /** The secrets of the records that verified a delivery before, earliest proven first. */
  proven: Set<string>;
  /** Record id and ciphertext → secret, so a reload decrypts only what changed. */
  decrypted: Map<string, string>;
}

/** What a delivery's signature says about a domain's records. */
export type SenderCheck =
  | { verdict: 'signed'; senders: SourceStore[] }
  /** `domainKnown`: the domain has source stores (a delivery for one that has none cost nothing to check). */
  | { verdict: 'unsigned'; domainKnown: boolean }
  /** Not verified by a proven sender, and the rest was not tried: the caller's budget for that is spent. */
  | { verdict: 'limited' };

/** Proven senders checked at no cost to anyone's budget; the rest (proven later, or not at all) cost a budgeted scan. */
const FREE_SENDERS = 8;
const MAX_CACHED_DOMAINS = 10_000;

/**
 * The fulfillment webhook's secrets per supplier domain, decrypted once and kept while the
 * domain's version (source_store_domains, bumped by a trigger on any change of its records, by any
 * process) stays the same: a delivery costs one indexed read, whatever the number of records
 * sharing the domain. The secrets of the first records to verify a delivery (`webhook_proven_at`,
 * kept in the row, so every process knows them) are checked first, a few at most, whatever any
 * budget says: a supplier's delivery costs an HMAC or a few however many records strangers add with
 * its domain. Trying every other secret (proven later, then never proven) is the costly part, and
 * the caller decides when it may (`mayScan`).
 */
export class SourceSecrets {
  readonly #domains = new Map<string, Promise<DomainSecrets>>();
  readonly #stores: SourceStoreReads;

  constructor(
    private readonly ctx: { metrics: Metrics; secrets: SecretBox },
    stores: SourceStoreReads,
  ) {
    this.#stores = stores;
  }

  /**
   * Finds the records whose secret signed the delivery; `mayScan` is asked, with the number of
   * secrets it would cost, before trying more than the first proven senders.
   */
  async check(shopDomain: string, rawBody: Buffer, signature: string, mayScan: (secrets: number) => Promise<boolean>): Promise<SenderCheck> {
    const secrets = await this.#current(shopDomain);
    if (!secrets) return { verdict: 'unsigned', domainKnown: false };
    const proven = [...secrets.proven];
    const verifies = (secret: string) => {
      this.ctx.metrics.webhookSignatureChecks.inc();
      return verifySignature(rawBody, secret, signature);
    };
    const free = proven.slice(0, FREE_SENDERS).find(verifies);
    if (free) return { verdict: 'signed', senders: secrets.bySecret.get(free)! };
    // Proven later first, then never proven: anyone can prove a record of their own, so beyond the
    // first few every check is budgeted.
    const others = [...proven.slice(FREE_SENDERS), ...[...secrets.bySecret.keys()].filter((secret) => !secrets.proven.has(secret))];
    if (others.length === 0) return { verdict: 'unsigned', domainKnown: true };
    if (!(await mayScan(others.length))) return { verdict: 'limited' };
    const found = others.find(verifies);
    if (!found) return { verdict: 'unsigned', domainKnown: true };
    const senders = secrets.bySecret.get(found)!;
    const unproven = senders.filter((store) => !store.webhookProvenAt).map((store) => store.id);
    if (unproven.length > 0) {
      // Bumps the domain's version: every process reloads it with this sender proven.
      await this.#stores.markWebhookProven(unproven);
      secrets.proven.add(found);
    }
    return { verdict: 'signed', senders };
  }

  async #current(shopDomain: string): Promise<DomainSecrets | null> {
    const version = await this.#stores.domainVersion(shopDomain);
    if (version === null) return null;
    const cached = await this.#domains.get(shopDomain)?.catch(() => undefined);
    if (cached?.version === version) return cached;
    const loading = this.#load(shopDomain, version, cached);
    if (this.#domains.size >= MAX_CACHED_DOMAINS) this.#domains.clear();
    this.#domains.set(shopDomain, loading);
    return loading;
  }

  /** Stamped with the version read before the rows: a change committed in between only makes the next delivery reload. */
  async #load(shopDomain: string, version: number, previous: DomainSecrets | undefined): Promise<DomainSecrets> {
    const stores = await this.#stores.activeByDomain(shopDomain);
    const secrets: DomainSecrets = { version, bySecret: new Map(), proven: new Set(), decrypted: new Map() };
    const provenFirst = (store: SourceStore) => store.webhookProvenAt?.getTime() ?? Number.POSITIVE_INFINITY;
    for (const store of stores.sort((a, b) => provenFirst(a) - provenFirst(b))) {
      const sealed = `${store.id}:${store.webhookSecretEncrypted}`;
      const secret = previous?.decrypted.get(sealed) ?? this.ctx.secrets.decrypt(store.webhookSecretEncrypted, store.id);
      secrets.decrypted.set(sealed, secret);
      secrets.bySecret.set(secret, [...(secrets.bySecret.get(secret) ?? []), store]);
      if (store.webhookProvenAt) secrets.proven.add(secret);
    }
    return secrets;
  }
}
