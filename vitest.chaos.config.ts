import { defineConfig } from 'vitest/config';
import { ChaosSequencer } from './test/chaos/support/sequencer.ts';

/** The slow reliability suite (`npm run test:chaos`): crashes, outages, faults, fuzzing. */
export default defineConfig({
  test: {
    include: ['test/chaos/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts', 'test/chaos/global-setup.ts'],
    testTimeout: 300_000,
    hookTimeout: 120_000,
    pool: 'forks',
    fileParallelism: false,
    // The whole-suite secrets check (zz-secrets.test.ts) reads what every other file recorded.
    sequence: { sequencer: ChaosSequencer },
  },
});
