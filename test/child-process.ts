/**
 * How the suites start the project's code in a child process: node on the bundle of the current sources that
 * test/setup/child-bundles.ts built for this run, or, when there is none (a file run outside vitest's set-up), tsx on
 * the source itself. Either way the child runs the code of the checkout.
 */
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { inject } from 'vitest'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

declare module 'vitest' {
  export interface ProvidedContext {
    /** Each child entry → its bundle for this run (absent outside test/setup/child-bundles.ts's set-up). */
    childBundles: Record<ChildEntry, string>
  }
}

/** The sources the suites run in child processes (paths from the repository root). */
export const CHILD_ENTRIES = [
  'src/cli/bin.ts',
  'src/riskcheck.ts',
  'src/sources/smtp/index.ts',
  'test/children/bulk-worker.ts',
  'test/children/delivery-crash.ts',
  'test/children/delivery-worker.ts',
  'test/children/lookup-crash.ts',
  'test/children/open-store.ts',
  'test/fixtures/serve/signal-at-listening.ts',
] as const

/** One of {@link CHILD_ENTRIES}. */
export type ChildEntry = (typeof CHILD_ENTRIES)[number]

function bundleOf(entry: ChildEntry): string | undefined {
  try {
    return inject('childBundles')?.[entry]
  } catch {
    return undefined
  }
}

/** node's arguments that run `entry` (then the entry's own arguments follow). */
export function nodeArgs(entry: ChildEntry): string[] {
  const bundle = bundleOf(entry)
  return bundle ? [bundle] : ['--import', 'tsx', join(ROOT, entry)]
}

/**
 * For a child that runs a script (`node … -e`): node's flags before the script, and the file its `import()` of
 * `entry` loads.
 */
export function scriptImport(entry: ChildEntry): { flags: string[]; file: string } {
  const bundle = bundleOf(entry)
  return bundle ? { flags: [], file: bundle } : { flags: ['--import', 'tsx'], file: join(ROOT, entry) }
}
