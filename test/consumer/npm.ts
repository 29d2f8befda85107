/**
 * npm as a new user runs it, for test/consumer/run.ts and scripts/bench/install.ts: pack the checkout, make a fresh
 * project (`npm init -y`), install into it, and read what was installed (its lockfile) and how big it is.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/** npm without its audit, funding and update notices (the output stays about the install). */
export const NPM_ENV: NodeJS.ProcessEnv = { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' }

/** What a command did. */
export interface Run {
  code: number | null
  out: string
  err: string
  ms: number
}

/** Runs a command to its end (30 minutes at most: a guard against a hang, not a limit on a slow install). */
export function run(cmd: string, args: string[], o: { cwd: string; env?: NodeJS.ProcessEnv; input?: string }): Run {
  const t = performance.now()
  const r = spawnSync(cmd, args, { cwd: o.cwd, env: o.env ?? NPM_ENV, input: o.input ?? '', encoding: 'utf8', timeout: 1_800_000, maxBuffer: 64 << 20 })
  return { code: r.status, out: r.stdout ?? '', err: (r.stderr ?? '') + (r.error ? `\n${r.error.message}` : ''), ms: performance.now() - t }
}

/** `r`, or an Error with the command's output when it failed. */
export function must(r: Run, what: string): Run {
  if (r.code !== 0) throw new Error(`${what} failed (exit ${r.code}):\n${r.out}\n${r.err}`)
  return r
}

/** `npm pack` of the checkout at `root` (its dist/ as built) into `dest`; the tarball's path. */
export function pack(root: string, dest: string): string {
  if (!existsSync(join(root, 'dist', 'index.js'))) throw new Error('dist/ is not built: run `npm run build` first')
  const r = must(run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dest], { cwd: root }), 'npm pack')
  const [info] = JSON.parse(r.out) as Array<{ filename: string }>
  return join(dest, info!.filename)
}

/** A fresh project in `dir`, as `npm init -y` makes it (CommonJS). */
export function newProject(dir: string): void {
  mkdirSync(dir, { recursive: true })
  must(run('npm', ['init', '-y'], { cwd: dir }), 'npm init -y')
}

/** One package of an installed tree. */
export interface InstalledPackage {
  /** `node_modules/…` path */
  path: string
  name: string
  version: string
  /** its `engines.node`, if any */
  node: string | null
  /** it has install scripts (preinstall, install, postinstall, or a binding.gyp) */
  installScript: boolean
}

/** The packages of a project's tree, from `node_modules/.package-lock.json` (or `package-lock.json`: `lock`). */
export function installedPackages(project: string, lock = join('node_modules', '.package-lock.json')): InstalledPackage[] {
  const json = JSON.parse(readFileSync(join(project, lock), 'utf8')) as {
    packages: Record<string, { version?: string; engines?: { node?: string } | string[]; hasInstallScript?: boolean; link?: boolean }>
  }
  return Object.entries(json.packages)
    .filter(([path, p]) => path.startsWith('node_modules/') && !p.link)
    .map(([path, p]) => ({
      path,
      name: path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length),
      version: p.version ?? '?',
      node: (!Array.isArray(p.engines) && p.engines?.node) || null,
      installScript: p.hasInstallScript === true,
    }))
}

/** Disk usage of `dir` in bytes, as `du -sk` counts it. */
export function sizeOf(dir: string): number {
  const r = must(run('du', ['-sk', dir], { cwd: dir }), 'du')
  return Number(r.out.split(/\s/)[0]) * 1024
}

/** `238 MB` */
export const megabytes = (bytes: number): string => `${Math.round(bytes / 1048576)} MB`
