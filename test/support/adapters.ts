/**
 * The platform adapters as the service builds them (src/platforms/), against a sandbox of the
 * suite's own and paced through the database (src/pacing/), for the suites that drive the adapters
 * directly: `adapterBench` starts the sandbox and the pacing before the suite's tests and closes them
 * after (vitest hooks where it is called: a file's top level, or a describe).
 */
import { afterAll, beforeAll } from 'vitest';
import type { Platform } from '../../src/orders/types.ts';
import type { PacingRate } from '../../src/pacing/rates.ts';
import { createPlatformAdapters, type PlatformAdapter, type PlatformAdapterOptions, type StoreConnection } from '../../src/platforms/index.ts';
import { startSandbox, type Sandbox } from '../sandbox/server.ts';
import { startTestPacing } from './pacer.ts';

export type TestPacing = Awaited<ReturnType<typeof startTestPacing>>;

/** Adapter settings of a test: `pacing`, the rates of the pacer they share (every platform unpaced unless told). */
export type AdapterSettings = Omit<PlatformAdapterOptions, 'pacer'> & { pacing?: Partial<Record<Platform, PacingRate>> };

export interface AdapterBenchOptions {
  /** Names the bench's stores: storeId `<name>_store_<n>`, shop domain `<name>-<n>.example`, token `tok_<name>_secret_<n>`. */
  name: string;
  /** The adapters' timeout per request; 2 s unless told (large answers want more). */
  timeoutMs?: number;
}

export interface AdapterBench {
  readonly sandbox: Sandbox;
  readonly pacing: TestPacing;
  /** Adapters on the sandbox, unpaced, with the bench's timeout and an inline Retry-After wait of 1.5 s. */
  readonly adapters: Record<Platform, PlatformAdapter>;
  /** Adapters like `adapters`, with other settings. */
  adaptersWith(settings?: AdapterSettings): Record<Platform, PlatformAdapter>;
  /** A fresh store registered on the sandbox, so faults, logs and pacing never leak between tests. */
  newStore(platform: Platform): StoreConnection;
}

export function adapterBench({ name, timeoutMs = 2_000 }: AdapterBenchOptions): AdapterBench {
  let sandbox: Sandbox | undefined;
  let pacing: TestPacing | undefined;
  let adapters: Record<Platform, PlatformAdapter> | undefined;
  let storeCount = 0;
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the adapter bench is used before its beforeAll ran');
    return value;
  };
  const snake = name.replaceAll('-', '_');

  const bench: AdapterBench = {
    get sandbox() {
      return started(sandbox);
    },
    get pacing() {
      return started(pacing);
    },
    get adapters() {
      return started(adapters);
    },
    adaptersWith({ pacing: rates, ...options } = {}) {
      return createPlatformAdapters({
        baseUrlTemplate: started(sandbox).baseUrlTemplate,
        timeoutMs,
        maxInlineRetryAfterMs: 1_500,
        pacer: started(pacing).pacer(rates),
        ...options,
      });
    },
    newStore(platform) {
      storeCount += 1;
      const store = { storeId: `${snake}_store_${storeCount}`, platform, shopDomain: `${name}-${storeCount}.example`, accessToken: `tok_${snake}_secret_${storeCount}` };
      started(sandbox).registerStore(store.shopDomain, { accessToken: store.accessToken });
      return store;
    },
  };

  beforeAll(async () => {
    sandbox = await startSandbox();
    pacing = await startTestPacing();
    adapters = bench.adaptersWith();
  });
  afterAll(async () => {
    await pacing?.close();
    await sandbox?.close();
  });
  return bench;
}
