/**
 * Global set-up of the test run: builds what the suites start as child processes (the `riskcheck` command, the
 * children of test/children/, the modules their `-e` scripts import) from the current sources with esbuild, once,
 * into a folder of this run under node_modules/.cache, removed at the end. A child then starts in well under a second,
 * where tsx compiled each of its few hundred modules at every start (several seconds each, over ten on a loaded
 * machine). test/child-process.ts hands the suites the files; the packages stay external, as in dist/.
 */
import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import type { TestProject } from 'vitest/node'
import { CHILD_ENTRIES, type ChildEntry } from '../child-process.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

export default async function setup(project: TestProject): Promise<() => void> {
  const outdir = join(ROOT, 'node_modules', '.cache', 'riskcheck-test-children', String(process.pid))
  rmSync(outdir, { recursive: true, force: true })
  mkdirSync(outdir, { recursive: true })
  const names = Object.fromEntries(CHILD_ENTRIES.map((entry, i) => [`${i}-${entry.replace(/^.*\//, '').replace(/\.ts$/, '')}`, join(ROOT, entry)]))
  await build({
    entryPoints: names,
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    outExtension: { '.js': '.mjs' },
    logLevel: 'error',
  })
  project.provide('childBundles', Object.fromEntries(Object.keys(names).map((name, i) => [CHILD_ENTRIES[i], join(outdir, `${name}.mjs`)])) as Record<ChildEntry, string>)
  return () => rmSync(outdir, { recursive: true, force: true })
}
