import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Integration tests start real daemons on loopback; running files in parallel on a
    // 2-core machine makes their timing assertions flaky, so files run one after another.
    fileParallelism: false,
  },
});
