/**
 * Global set-up of the test run: builds what the suites start as child processes (the `riskcheck` command, the
 * children of test/children/, the modules their `-e` scripts import) from the current sources with esbuild, once,
 * into a folder of this run under node_modules/.cache, removed at the end. A child then starts in well under a second,
 * where tsx compiled each of its few hundred modules at every start (several seconds each, over ten on a loaded
 * machine). test/child-process.ts hands the suites the files; the packages stay external, as in dist/, but for the
 * children started dozens of times a run (INLINE_PACKAGES): their packages are bundled in, which halves a start's CPU
 * (node resolving and reading a few hundred package files at each start was half of it).
 */
import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import type { TestProject } from 'vitest/node'
import { CHILD_ENTRIES, type ChildEntry } from '../child-process.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/** Children whose packages are bundled in: test/lookup-crash-points.test.ts starts one per case. */
const INLINE_PACKAGES: ChildEntry[] = ['test/children/lookup-crash.ts']
/**
 * Packages left out of those too: native addons, and pino's, which find their worker files next to their own source
 * (a transport's thread).
 */
const KEEP_EXTERNAL = ['better-sqlite3', 'pg-native', 'pino', 'thread-stream']

export default async function setup(project: TestProject): Promise<() => void> {
  const outdir = join(ROOT, 'node_modules', '.cache', 'riskcheck-test-children', String(process.pid))
  rmSync(outdir, { recursive: true, force: true })
  mkdirSync(outdir, { recursive: true })
  const names = Object.fromEntries(CHILD_ENTRIES.map((entry, i) => [`${i}-${entry.replace(/^.*\//, '').replace(/\.ts$/, '')}`, join(ROOT, entry)]))
  const inline = Object.fromEntries(Object.entries(names).filter(([, file]) => INLINE_PACKAGES.some((e) => join(ROOT, e) === file)))
  await build({
    entryPoints: Object.fromEntries(Object.entries(names).filter(([name]) => !(name in inline))),
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
  await build({
    entryPoints: inline,
    outdir: join(outdir, 'inline'),
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: KEEP_EXTERNAL,
    // the bundled CommonJS packages require node's own modules
    banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
    outExtension: { '.js': '.mjs' },
    logLevel: 'error',
  })
  const fileOf = (name: string) => join(outdir, ...(name in inline ? ['inline'] : []), `${name}.mjs`)
  project.provide('childBundles', Object.fromEntries(Object.keys(names).map((name, i) => [CHILD_ENTRIES[i], fileOf(name)])) as Record<ChildEntry, string>)
  return () => rmSync(outdir, { recursive: true, force: true })
}
