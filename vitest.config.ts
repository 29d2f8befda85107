import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'examples/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: 'forks',
    // Three files at once on CI's two cores (vitest's default there is one): most of a file's time is spent waiting
    // on child processes, servers, PostgreSQL, Redis and Chromium, not on its own CPU. Every suite waits on events,
    // not on wall-clock bounds, so a busier machine makes it slower, not red. `--maxWorkers N` overrides it.
    maxWorkers: 3,
    // The children the suites start (the CLI, test/children/) are built once per run (test/child-process.ts).
    globalSetup: ['test/setup/child-bundles.ts'],
    // No test may reach anything but loopback (DNS, SMTP, RDAP, webhooks, fetch).
    setupFiles: ['test/setup/no-internet.ts'],
  },
})
