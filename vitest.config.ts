import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    globalSetup: ['test/harness/global-temp.ts'],
    projects: [
      {
        // Pure cores and single-process tests: their files run side by side (one per core),
        // all of them before the first daemon starts.
        extends: true,
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], sequence: { groupOrder: 0 } },
      },
      {
        // Integration and browser tests start real daemons on loopback; running those files
        // in parallel on a 2-core machine makes their timing assertions flaky, so they run one
        // after another, after the unit files.
        extends: true,
        test: { name: 'cluster', include: ['test/integration/**/*.test.ts', 'test/ui/**/*.test.ts'], fileParallelism: false, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
