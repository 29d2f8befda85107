import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'examples/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: 'forks',
    // The children the suites start (the CLI, test/children/) are built once per run (test/child-process.ts).
    globalSetup: ['test/setup/child-bundles.ts'],
    // No test may reach anything but loopback (DNS, SMTP, RDAP, webhooks, fetch).
    setupFiles: ['test/setup/no-internet.ts'],
  },
})
