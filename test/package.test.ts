/**
 * The package as a newcomer meets it: a LICENSE that matches package.json, Node versions that every dependency
 * supports and that the README states, a set-up whose commands work at once, `npm install` and `npm test` without
 * build noise (but with the whole story when the build fails), and no packed tarball in git.
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import semver from 'semver'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const root = (p: string) => fileURLToPath(new URL(`../${p}`, import.meta.url))
const pkg = JSON.parse(readFileSync(root('package.json'), 'utf8')) as {
  overrides: Record<string, string | Record<string, string>>
  license: string
  engines: { node: string }
  files: string[]
  scripts: Record<string, string>
  allowScripts: Record<string, boolean>
}
const lock = JSON.parse(readFileSync(root('package-lock.json'), 'utf8')) as {
  packages: Record<string, { engines?: { node?: string } | string[]; dev?: boolean; optional?: boolean; version?: string; hasInstallScript?: boolean }>
}
const readme = readFileSync(root('README.md'), 'utf8')

/** Lockfile entries with a Node engines range, by kind. */
function enginesOf(kind: 'runtime' | 'dev'): Array<[string, string]> {
  return Object.entries(lock.packages)
    .filter(([path, p]) => path !== '' && !p.optional && Boolean(p.dev) === (kind === 'dev'))
    .flatMap(([path, p]) => {
      const node = !Array.isArray(p.engines) ? p.engines?.node : undefined
      return node ? [[`${path.replace(/^.*node_modules\//, '')}@${p.version}`, node] as [string, string]] : []
    })
}

describe('the package', () => {
  it('has a LICENSE file matching package.json (and shipped with it)', () => {
    expect(pkg.license).toBe('MIT')
    expect(existsSync(root('LICENSE'))).toBe(true)
    const text = readFileSync(root('LICENSE'), 'utf8')
    expect(text.split('\n')[0]).toBe('MIT License')
    expect(text).toContain('Permission is hereby granted, free of charge')
    expect(pkg.files).toContain('LICENSE')
  })

  it('ships the documents the README links (docs/*.md), so its links work in node_modules too', () => {
    expect(pkg.files).toContain('README.md')
    expect(pkg.files).toContain('docs/*.md')
  })

  it('every runtime dependency supports the oldest Node that package.json promises (no EBADENGINE on install)', () => {
    const oldest = semver.minVersion(pkg.engines.node)!.version
    expect(oldest).toBe('20.11.0')
    const entries = enginesOf('runtime')
    expect(entries.length).toBeGreaterThan(10)
    expect(entries.filter(([, range]) => !semver.satisfies(oldest, range))).toEqual([])
  })

  it('the repository’s overrides touch only what this repository installs for development (a consumer never gets them)', () => {
    const names = Object.entries(pkg.overrides).flatMap(([name, v]) => [name, ...(typeof v === 'object' ? Object.keys(v) : [])])
    expect(names.length).toBeGreaterThan(0)
    for (const name of names) {
      const entries = Object.entries(lock.packages).filter(([path]) => path.endsWith(`node_modules/${name}`))
      expect(entries.length, name).toBeGreaterThan(0)
      for (const [path, p] of entries) expect(p.dev, `${path} is installed for a consumer too, where the override does not apply`).toBe(true)
    }
  })

  it('the README states the Node versions: engines for using it, the test tools’ minimum for developing it', () => {
    expect(readme).toContain('Node.js 20.11 or later')
    const devMinimum = '20.19.0'
    expect(readme).toContain('Node.js 20.19 or later')
    expect(enginesOf('dev').filter(([, range]) => !semver.satisfies(devMinimum, range))).toEqual([])
    expect(semver.satisfies(process.version, pkg.engines.node)).toBe(true)
  })

  it('`npm test` builds silently (no file listing), and neither it nor `npx riskcheck` rebuilds a fresh build', () => {
    expect(pkg.scripts.pretest).toBe('node scripts/prepare.mjs')
    expect(pkg.scripts.prepare).toBe('node scripts/prepare.mjs')
    const prepare = readFileSync(root('scripts/prepare.mjs'), 'utf8')
    expect(prepare).toContain("process.env.npm_command === 'exec'")
    expect(prepare).toContain("process.env.npm_lifecycle_event === 'pretest'")
  })
})

/** Runs scripts/prepare.mjs (what `npm install` runs) with tsup arguments; resolves with its exit code and output. */
function prepare(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [root('scripts/prepare.mjs'), ...args], {
    cwd: root(''),
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, npm_command: 'ci' },
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })))
}

describe('the prepare script (`npm install`, `npm ci`)', () => {
  let dir: string
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'riskcheck-prepare-'))
    writeFileSync(join(dir, 'good.ts'), 'export const answer: number = 42\n')
    writeFileSync(join(dir, 'bad.ts'), "export const answer: number = 'forty-two'\n")
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('prints one line when the build succeeds (tsup lists every file it writes otherwise)', async () => {
    const r = await prepare([join(dir, 'good.ts'), '--out-dir', join(dir, 'out-good')])
    expect(r.code, r.stderr).toBe(0)
    expect(r.stderr).toBe('')
    expect(r.stdout).toMatch(/^riskcheck: build done \(tsup, \d+ s\)\n$/)
    expect(existsSync(join(dir, 'out-good', 'good.d.ts'))).toBe(true)
  }, 180_000)

  it('fails loudly: a failed build exits non-zero and shows everything tsup said, the type error included', async () => {
    const r = await prepare([join(dir, 'bad.ts'), '--out-dir', join(dir, 'out-bad')])
    expect(r.code).not.toBe(0)
    expect(r.stderr).toContain("error TS2322: Type 'string' is not assignable to type 'number'")
    expect(r.stderr).toContain('riskcheck: the build failed (tsup exit 1)')
  }, 180_000)
})

describe('the repository', () => {
  it('every install script npm could run is reviewed in allowScripts (so `npm ci` has no "not yet covered" warning, and a new one fails here)', () => {
    const withScripts = [...new Set(Object.entries(lock.packages).filter(([, p]) => p.hasInstallScript).map(([path]) => path.replace(/^.*node_modules\//, '')))]
    expect(withScripts.length).toBeGreaterThan(0)
    expect(withScripts.filter((name) => typeof pkg.allowScripts[name] !== 'boolean')).toEqual([])
    // the reviewed decisions (docs/decisions.md, "Installing"): native addons and binaries the service needs run;
    // msgpackr-extract's source build is not needed (its prebuilt platform package loads without it)
    expect(pkg.allowScripts).toEqual({ 'better-sqlite3': true, esbuild: true, 'msgpackr-extract': false })
  })

  it('ignores what `npm pack` writes (riskcheck-0.1.0.tgz)', async () => {
    const child = spawn('git', ['check-ignore', '--no-index', 'riskcheck-0.1.0.tgz', 'some/dir/other-1.2.3.tgz'], { cwd: root(''), stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    expect(await new Promise((resolve) => child.on('close', resolve))).toBe(0)
    expect(out.trim().split('\n')).toEqual(['riskcheck-0.1.0.tgz', 'some/dir/other-1.2.3.tgz'])
  })
})
