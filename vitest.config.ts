import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'examples/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: 'forks',
    // Two files at once (vitest's default on two cores is one): most of a file's time is spent waiting on child
    // processes, servers, PostgreSQL, Redis and Chromium. Three at once starved the PostgreSQL outage suite's start
    // past its database time-out on two cores. `--maxWorkers N` overrides it.
    maxWorkers: 2,
    // The children the suites start (the CLI, test/children/) are built once per run (test/child-process.ts).
    globalSetup: ['test/setup/child-bundles.ts'],
    // No test may reach anything but loopback (DNS, SMTP, RDAP, webhooks, fetch).
    setupFiles: ['test/setup/no-internet.ts'],
  },
})
