import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 600_000,
    // Integration suites share one machine's Docker engine and ports: run files one at a time
    // (`npm run test:unit` runs the unit files two at a time instead).
    fileParallelism: false,
    reporters: ['default'],
  },
});
