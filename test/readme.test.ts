import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { GENERATED_DOCS, renderReadme } from '../scripts/readme.js'

const readme = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8')

describe('README', () => {
  it('generated blocks match the code (run `npm run readme` to update)', () => {
    for (const file of GENERATED_DOCS) {
      const text = readFileSync(file, 'utf8')
      expect(renderReadme(text), file).toBe(text)
    }
  })
  it('shows the two set-up commands and the test command', () => {
    expect(readme).toContain('npm install\nnpx riskcheck check --email')
    expect(readme).toContain('npm test')
  })
})

describe('README tables agree with the code', () => {
  it('the line-type mapping table is the one the phone lookups use', async () => {
    const { LINE_TYPE_BY_PLAN_TYPE } = await import('../src/sources/phone/parse.js')
    const table = readme.slice(readme.indexOf('| libphonenumber type | `line_type` |'))
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
