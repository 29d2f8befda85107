/**
 * The repository explains itself: docs/api.md is the reference generated from the OpenAPI document and the CSV writer (`npm run docs`)
 * and fails here when it drifts from the code; the README links every document in docs/, every relative link of
 * README.md and docs/*.md leads to a file and heading that exist, and the documents speak to readers, not about how
 * they were made.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'
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

  it('the README links every document in docs/', () => {
    const readme = read('README.md')
    const docs = readdirSync(fileURLToPath(new URL('../docs', import.meta.url))).filter((f) => f.endsWith('.md'))
    expect(docs.length).toBeGreaterThan(8)
    expect(docs.filter((f) => !readme.includes(`](docs/${f})`))).toEqual([])
  })

  it('every relative link of README.md and docs/*.md leads to a file that exists, and its #anchor to a heading there', () => {
    const broken: string[] = []
    let count = 0
    for (const doc of DOCS) {
      for (const { target, line } of links(read(doc))) {
        if (/^[a-z]+:/i.test(target)) continue // http(s), mailto
        count++
        const [path, anchor] = target.split('#') as [string, string | undefined]
        const file = path === '' ? doc : normalize(join(dirname(doc), decodeURIComponent(path)))
        if (!existsSync(fileURLToPath(new URL(`../${file}`, import.meta.url)))) broken.push(`${doc}:${line}: ${target} (no file ${file})`)
        else if (anchor && file.endsWith('.md') && !anchors(read(file)).has(anchor)) broken.push(`${doc}:${line}: ${target} (no heading #${anchor} in ${file})`)
      }
    }
    expect(count).toBeGreaterThan(40)
    expect(broken).toEqual([])
  })

  it('the documents speak to readers: no notes about how they were made', () => {
    const made = /\bthis stop\b|\bon main\b|\bthis change\b|\bthe contract\b(?! test)|\bshared 2-core\b|\bbuild machine\b|\bthis (?:project's |shared )?machine\b|\bthis session\b|\bbefore this\b/i
    const hits = DOCS.flatMap((doc) => read(doc).split('\n').flatMap((l, i) => (made.test(l) ? [`${doc}:${i + 1}: ${l.trim().slice(0, 120)}`] : [])))
    expect(hits).toEqual([])
  })

  it('every section of README.md or docs/*.md that the code cites (`docs/x.md "Heading"`) is there, as a heading or a bold label', () => {
    const files = ['src', 'scripts', 'test', 'examples']
      .flatMap((d) => filesUnder(join(ROOT, d)))
      .filter((f) => /\.(ts|mjs|cjs|js|yaml)$/.test(f) && !f.includes('fixtures') && f !== fileURLToPath(import.meta.url))
    const missing: string[] = []
    let count = 0
    for (const f of files) {
      // comments joined across their line breaks
      const text = readFileSync(f, 'utf8').replace(/\n\s*(?:\*|\/\/|#)\s*/g, ' ')
      for (const m of text.matchAll(/(docs\/[a-z-]+\.md|README(?:\.md)?),? "([^"']+)"/g)) {
        count++
        const doc = read(m[1]!.startsWith('README') ? 'README.md' : m[1]!)
        const name = m[2]!.toLowerCase()
        const headings = doc.split('\n').filter((l) => /^#+ /.test(l)).map((l) => l.replace(/^#+ |`/g, '').toLowerCase())
        const labels = [...doc.matchAll(/\*\*([^*]+?)\.?\*\*/g)].map((l) => l[1]!.toLowerCase())
        if (!headings.some((h) => h.includes(name)) && !labels.includes(name)) missing.push(`${relative(ROOT, f)}: ${m[0]}`)
      }
    }
    expect(count).toBeGreaterThan(30)
    expect(missing).toEqual([])
  })
})

const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** Files of a directory tree. */
function filesUnder(d: string): string[] {
  return readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? filesUnder(join(d, f)) : [join(d, f)]))
}

/** README.md and every Markdown file in docs/. */
const DOCS = ['README.md', ...readdirSync(fileURLToPath(new URL('../docs', import.meta.url))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]

/** The Markdown links of a document outside code (`[text](target)`), with their line numbers. */
function links(text: string): Array<{ target: string; line: number }> {
  const out: Array<{ target: string; line: number }> = []
  let fenced = false
  text.split('\n').forEach((l, i) => {
    if (/^```/.test(l)) fenced = !fenced
    if (fenced) return
    for (const m of l.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) out.push({ target: m[1]!, line: i + 1 })
  })
  return out
}

/** The anchors of a Markdown document: GitHub's slugs of its headings, and its `<a id="…">` anchors. */
function anchors(text: string): Set<string> {
  const out = new Set<string>()
  const seen = new Map<string, number>()
  let fenced = false
  for (const l of text.split('\n')) {
    if (/^```/.test(l)) fenced = !fenced
    if (fenced) continue
    for (const m of l.matchAll(/<a id="([^"]+)"/g)) out.add(m[1]!)
    const h = /^#{1,6} (.+)$/.exec(l)
    if (!h) continue
    const text = h[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    const slug = text.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/ /g, '-')
    const n = seen.get(slug) ?? 0
    seen.set(slug, n + 1)
    out.add(n === 0 ? slug : `${slug}-${n}`)
  }
  return out
}
