import { configDefaults, defineConfig } from 'vitest/config'
import { BaseSequencer, type TestSpecification } from 'vitest/node'

/**
 * Files that need a process of their own: one replaces a module (vi.mock) the others import as is, one checks what a
 * fresh process has loaded.
 */
const OWN_PROCESS = ['test/ip-default-data.test.ts', 'test/serve-warm-ip.test.ts']

/**
 * The files that take longest (Chromium, npm installs, killed children), started first: on two workers a long file
 * started late is the run's tail. The rest in vitest's own order.
 */
const SLOW_FIRST = ['test/dashboard/layout.test.ts', 'test/install.test.ts', 'test/lookup-crash-points.test.ts', 'test/dashboard/accounts.test.ts', 'test/scale-out-crash.test.ts']

class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification) => {
      const i = SLOW_FIRST.findIndex((p) => f.moduleId.replaceAll('\\', '/').endsWith(p))
      return i < 0 ? SLOW_FIRST.length : i
    }
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b))
  }
}

export default defineConfig({
  test: {
    // A hang guard, not a speed bound: the browser and process scenarios take 13–20 s on a slow shared machine
    // (two-factor set-up, webhook endpoints), and a test past its bound fails however right its answers are.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two files at once (vitest's default on two cores is one): most of a file's time is spent waiting on child
    // processes, servers, PostgreSQL, Redis and Chromium. Three at once starved the PostgreSQL outage suite's start
    // past its database time-out on two cores. `--maxWorkers N` overrides it.
    maxWorkers: 2,
    sequence: { sequencer: SlowFirst },
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
