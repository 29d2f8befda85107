/**
 * The package as a newcomer meets it: a LICENSE that matches package.json, Node versions that every dependency
 * supports and that the README states, a set-up whose commands work at once, and `npm test` without build noise.
 */
import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import semver from 'semver'
import { describe, expect, it } from 'vitest'

const root = (p: string) => fileURLToPath(new URL(`../${p}`, import.meta.url))
const pkg = JSON.parse(readFileSync(root('package.json'), 'utf8')) as {
  overrides: Record<string, string | Record<string, string>>
  license: string
  engines: { node: string }
  files: string[]
  scripts: Record<string, string>
}
const lock = JSON.parse(readFileSync(root('package-lock.json'), 'utf8')) as {
  packages: Record<string, { engines?: { node?: string } | string[]; dev?: boolean; optional?: boolean; version?: string }>
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

  it('`npm test` builds silently (no file listing) and `npx riskcheck` does not rebuild a fresh build', () => {
    expect(pkg.scripts.pretest).toBe('tsup --silent')
    expect(pkg.scripts.prepare).toBe('node scripts/prepare.mjs')
    const prepare = readFileSync(root('scripts/prepare.mjs'), 'utf8')
    expect(prepare).toContain("process.env.npm_command === 'exec'")
  })
})
