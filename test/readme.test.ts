import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { blockNames, GENERATED_DOCS, renderReadme } from '../scripts/readme.js'
import { generatedBlocks } from '../scripts/readme-blocks.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const read = (p: string) => readFileSync(join(ROOT, p), 'utf8')
const readme = read('README.md')

describe('README', () => {
  it('generated blocks match the code, in README.md and every docs/*.md (run `npm run readme` to update)', () => {
    expect(GENERATED_DOCS.map((f) => relative(ROOT, f))).toEqual(expect.arrayContaining(['README.md', 'docs/options.md', 'docs/scoring.md', 'docs/data.md']))
    for (const file of GENERATED_DOCS) {
      const text = readFileSync(file, 'utf8')
      expect(renderReadme(text), file).toBe(text)
    }
  })

  it('every generated block is in exactly one document (a block that moves is still generated and checked)', () => {
    const placed = GENERATED_DOCS.flatMap((f) => blockNames(readFileSync(f, 'utf8')))
    expect(placed.sort()).toEqual(Object.keys(generatedBlocks()).sort())
  })

  it('shows the two set-up commands and the test command', () => {
    expect(readme).toContain('npm install\nnpx riskcheck check --email')
    expect(readme).toContain('npm test')
  })
})

/** Files of a directory tree. */
function filesUnder(d: string): string[] {
  return readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? filesUnder(join(d, f)) : [join(d, f)]))
}

/**
 * The environment variables the test suites read from the environment they are started in: `process.env.NAME` (or
 * `process.env['NAME']`) read in test/, the vitest config and the examples' tests — but not the ones a test sets
 * itself (`process.env.NAME = …`, or a `NAME:` key of an environment it gives a child process).
 */
function variablesTheTestsRead(): { read: string[]; setByTests: string[] } {
  const files = [
    ...filesUnder(join(ROOT, 'test')).filter((f) => !f.includes(join('test', 'fixtures', 'email')) && /\.(ts|mts|js|mjs|cjs)$/.test(f)),
    ...filesUnder(join(ROOT, 'examples')).filter((f) => f.endsWith('.test.ts')),
    ...readdirSync(ROOT).filter((f) => /^vitest\.config\./.test(f)).map((f) => join(ROOT, f)),
  ]
  const texts = files.map((f) => readFileSync(f, 'utf8'))
  const read = new Set<string>()
  const set = new Set<string>()
  for (const text of texts) {
    // not inside a quoted string (a test that checks for the text `process.env.x` does not read it)
    for (const m of text.matchAll(/(?<!['"`])\bprocess\.env(?:\.([A-Za-z_]\w*)|\[\s*['"]([A-Za-z_]\w*)['"]\s*\])(\s*(?:\?\?|\|\||&&)?=(?!=))?/g)) {
      ;(m[3] ? set : read).add((m[1] ?? m[2])!)
    }
    for (const m of text.matchAll(/\{([^{}]*)\}\s*=\s*process\.env\b/g)) for (const n of m[1]!.split(',')) read.add(n.split(':')[0]!.trim())
  }
  for (const name of read) if (texts.some((t) => new RegExp(`[{,]\\s*${name}\\s*:`).test(t))) set.add(name)
  return { read: [...read].filter((n) => !set.has(n)).sort(), setByTests: [...set].sort() }
}

describe('README: what the test suites need', () => {
  const { read, setByTests } = variablesTheTestsRead()

  it('names every environment variable a test suite reads (Set-up → Tests)', () => {
    expect(read).toEqual(expect.arrayContaining(['RISKCHECK_TEST_DATABASE_URL', 'RISKCHECK_TEST_REDIS_URL', 'RISKCHECK_TEST_CHROMIUM', 'RISKCHECK_TEST_REQUIRE_BROWSER']))
    const tests = readme.slice(readme.indexOf('### Tests'), readme.indexOf('\n## ', readme.indexOf('### Tests')))
    expect(read.filter((n) => !tests.includes(`\`${n}\``))).toEqual([])
  })

  it('names no test variable that no test reads', () => {
    const named = [...new Set([...readme.matchAll(/`(RISKCHECK_TEST_\w+)`/g)].map((m) => m[1]!))]
    expect(named.filter((n) => !read.includes(n))).toEqual([])
    // the ones tests set for themselves are not the reader's business (and the scan does see them)
    expect(setByTests).toEqual(expect.arrayContaining(['RISKCHECK_TEST_HIDE_PACKAGES']))
  })
})

describe('docs/lookups.md tables agree with the code', () => {
  it('the line-type mapping table is the one the phone lookups use', async () => {
    const { LINE_TYPE_BY_PLAN_TYPE } = await import('../src/sources/phone/parse.js')
    const doc = read('docs/lookups.md')
    const table = doc.slice(doc.indexOf('| libphonenumber type | `line_type` |'))
    const lines = table.split('\n').slice(2)
    const rows = lines.slice(0, lines.findIndex((l) => !l.startsWith('| ')))
    const documented: Record<string, string> = {}
    for (const row of rows) {
      const [types, lineType] = row.split('|').slice(1, 3).map((c) => c.trim())
      for (const t of types!.split(',')) documented[t.trim()] = lineType!
    }
    expect(documented).toEqual(LINE_TYPE_BY_PLAN_TYPE)
  })
})
