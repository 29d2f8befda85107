/**
 * How long a new user's install takes and how big it is: the packed checkout (or `--tarball FILE`, e.g. an older
 * riskcheck) installed into fresh projects as the README says — the library, the library without the IP data
 * (`--omit=optional`, only when the package has optional dependencies), and with `--server` the service's packages
 * too, install scripts included (better-sqlite3 is compiled where no prebuilt binary fits). `--cold` gives npm an
 * empty cache, so every tarball is downloaded; otherwise npm's own cache serves what it has.
 *
 *   npx tsx scripts/bench/install.ts [--tarball FILE] [--cold] [--server]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { serverInstallCommand } from '../../src/server/packages.js'
import { installedPackages, megabytes, must, newProject, NPM_ENV, pack, run, sizeOf } from '../../test/consumer/npm.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const arg = (name: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined)
const work = mkdtempSync(join(tmpdir(), 'riskcheck-install-bench-'))
const tarball = arg('--tarball') ? resolve(arg('--tarball')!) : pack(ROOT, work)
const cold = process.argv.includes('--cold')

/** The tarball's package.json: does it have optional dependencies (the IP data)? */
const manifest = JSON.parse(must(run('tar', ['-xOzf', tarball, 'package/package.json'], { cwd: work }), 'tar').out) as { optionalDependencies?: object }

/** Installs into a fresh project and prints time, size, packages and the install scripts among them. */
function measure(label: string, args: string[]): void {
  const project = join(work, label.replace(/\W+/g, '-'))
  const env = cold ? { ...NPM_ENV, npm_config_cache: mkdtempSync(join(work, 'cache-')) } : NPM_ENV
  newProject(project)
  const r = must(run('npm', args, { cwd: project, env }), `npm ${args.join(' ')}`)
  const tree = installedPackages(project)
  const scripts = tree.filter((p) => p.installScript).map((p) => p.name)
  const line = `${label.padEnd(34)} ${(r.ms / 1000).toFixed(1).padStart(6)} s  ${megabytes(sizeOf(join(project, 'node_modules'))).padStart(7)}  ${String(tree.length).padStart(3)} packages  install scripts: ${scripts.join(', ') || 'none'}`
  console.log(line)
}

console.log(`${tarball} (${cold ? 'empty npm cache' : "npm's cache"}; Node ${process.version}, npm ${run('npm', ['--version'], { cwd: work }).out.trim()})`)
try {
  measure('library', ['install', tarball])
  if (manifest.optionalDependencies) measure('library, --omit=optional', ['install', tarball, '--omit=optional'])
  if (process.argv.includes('--server')) measure('library + the service', ['install', tarball, ...serverInstallCommand().split(' ').slice(2)])
} finally {
  rmSync(work, { recursive: true, force: true })
}
