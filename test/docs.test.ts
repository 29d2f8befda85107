/**
 * The repository explains itself: docs/api.md is the reference generated from the OpenAPI document and the CSV
 * writer (`npm run docs`) and fails here when it drifts from the code; docs/decisions.md exists and the README points
 * to both.
 */
import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { renderApiReference } from '../scripts/docs.js'
import { createResultsCsv } from '../src/bulk/csv.js'
import { BULK_TYPES } from '../src/schema.js'
import { ROUTES } from '../src/server/routes/index.js'
import { openApiPath } from '../src/server/openapi.js'

const read = (p: string) => readFileSync(fileURLToPath(new URL(`../${p}`, import.meta.url)), 'utf8')

describe('docs/', () => {
  it('docs/api.md is what `npm run docs` writes from the OpenAPI document (run it after changing a route)', () => {
    expect(read('docs/api.md')).toBe(renderApiReference())
  })

  it('docs/api.md documents every route', () => {
    const api = read('docs/api.md')
    for (const r of ROUTES) expect(api).toContain(`### \`${r.method} ${openApiPath(r.url)}\``)
  })

  it('docs/api.md lists the columns of results.csv that the writer puts in its header, for every type', async () => {
    const section = read('docs/api.md').split('## results.csv columns')[1]!.split('\n## ')[0]!
    const names = (row: string) => [...row.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)
    const base = section.split('\n').filter((l) => /^\| `[a-z_]+` \| /.test(l) && !BULK_TYPES.some((t) => l.startsWith(`| \`${t}\` |`))).map((l) => names(l)[0]!)
    expect(base).toContain('factors')
    for (const type of BULK_TYPES) {
      const row = section.split('\n').find((l) => l.startsWith(`| \`${type}\` |`))
      expect(row, type).toBeDefined()
      let header = ''
      for await (const chunk of createResultsCsv(type, (async function* () {})())) header += String(chunk)
      expect([...base, ...names(row!.split(' | ')[1]!)], type).toEqual(header.trimEnd().split(','))
    }
  })

  it('docs/decisions.md exists, the README links both, and nothing in the repository cites documents outside it', () => {
    expect(existsSync(fileURLToPath(new URL('../docs/decisions.md', import.meta.url)))).toBe(true)
    const readme = read('README.md')
    expect(readme).toContain('(docs/api.md)')
    expect(readme).toContain('(docs/decisions.md)')
    for (const doc of ['README.md', 'docs/api.md', 'docs/decisions.md']) expect(read(doc)).not.toMatch(/DESIGN\.md|spec\/service-api\.md|\/work\/shared/)
  })
})
