import { configDefaults, defineConfig } from 'vitest/config'

/**
 * Files that need a process of their own: one replaces a module (vi.mock) the others import as is, one checks what a
 * fresh process has loaded.
 */
const OWN_PROCESS = ['test/ip-default-data.test.ts', 'test/serve-warm-ip.test.ts']

export default defineConfig({
  test: {
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
    projects: [
      {
        extends: true,
        // A worker runs file after file in one process (modules loaded once): a fresh process per file cost more
        // time than most files' tests. A file must therefore leave no state behind that another file reads.
        test: {
          name: 'shared',
          isolate: false,
          include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'examples/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...OWN_PROCESS],
        },
      },
      { extends: true, test: { name: 'own-process', isolate: true, include: OWN_PROCESS } },
    ],
  },
})
