/**
 * The shape of the source tree: no module imports itself through others at run time (anywhere in src/), the CLI has
 * no import loop at all (not even through types: the core and each command share src/cli/shared.ts instead), what is
 * written once has one home (`UsageError`, the semaphore), and the account module (keys, ledger, plans, record views)
 * serves the HTTP routes and the CLI alike: the CLI never reaches into the routes, the module into neither. No
 * function spans over 150 lines, and each storage engine has one migration runner.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { functions, load, migrationRunners } from '../scripts/storage-census.js'

const SRC = fileURLToPath(new URL('../src', import.meta.url))

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f)
    if (statSync(p).isDirectory()) return sourceFiles(p)
    return p.endsWith('.ts') && !p.endsWith('.test.ts') ? [p] : []
  })
}

function allFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f)
    return statSync(p).isDirectory() ? allFiles(p) : [p]
  })
}

interface Edge {
  to: string
  typeOnly: boolean
}

/** The relative imports of a file (static, re-exports and dynamic `import()`), marked type-only where they are. */
function importsOf(file: string): Edge[] {
  const text = readFileSync(file, 'utf8')
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const edges: Edge[] = []
  const add = (spec: string, typeOnly: boolean) => {
    if (spec.startsWith('.')) edges.push({ to: resolve(dirname(file), spec.replace(/\.js$/, '.ts')), typeOnly })
  }
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause
      const named = clause?.namedBindings && ts.isNamedImports(clause.namedBindings) ? clause.namedBindings.elements : undefined
      const typeOnly = Boolean(clause?.isTypeOnly || (clause && !clause.name && named && named.length > 0 && named.every((e) => e.isTypeOnly)))
      add(node.moduleSpecifier.text, typeOnly)
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const named = node.exportClause && ts.isNamedExports(node.exportClause) ? node.exportClause.elements : undefined
      add(node.moduleSpecifier.text, node.isTypeOnly || Boolean(named && named.length > 0 && named.every((e) => e.isTypeOnly)))
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteral(node.arguments[0])) {
      add(node.arguments[0].text, false)
    }
    ts.forEachChild(node, visit)
  }
  visit(sf)
  return edges
}

/** Every cycle found by a depth-first walk, as `a → b → a` paths relative to src/. */
function cycles(files: string[], follow: (e: Edge) => boolean): string[] {
  const graph = new Map(files.map((f) => [f, importsOf(f).filter(follow).map((e) => e.to)]))
  const state = new Map<string, 'open' | 'done'>()
  const stack: string[] = []
  const found: string[] = []
  const visit = (n: string) => {
    state.set(n, 'open')
    stack.push(n)
    for (const d of graph.get(n) ?? []) {
      if (!graph.has(d)) continue
      if (state.get(d) === 'open') found.push([...stack.slice(stack.indexOf(d)), d].map((p) => relative(SRC, p)).join(' → '))
      else if (!state.has(d)) visit(d)
    }
    stack.pop()
    state.set(n, 'done')
  }
  for (const f of files) if (!state.has(f)) visit(f)
  return found
}

/** `file → import` for each import (type-only and dynamic ones included) of `files` into one of the folders `dirs`. */
function importsFrom(files: string[], dirs: string[]): string[] {
  return files.flatMap((f) =>
    importsOf(f)
      .filter((e) => dirs.some((d) => e.to.startsWith(d + sep)))
      .map((e) => `${relative(SRC, f)} → ${relative(SRC, e.to)}`),
  )
}

const definitions = (pattern: RegExp) =>
  sourceFiles(SRC)
    .filter((f) => pattern.test(readFileSync(f, 'utf8')))
    .map((f) => relative(SRC, f))

describe('source structure', () => {
  it('the cycle finder finds cycles, type-only ones only when asked (so an empty answer means something)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'riskcheck-cycles-'))
    try {
      writeFileSync(join(dir, 'a.ts'), "import type { B } from './b.js'\nexport const a = () => import('./c.js')\n")
      writeFileSync(join(dir, 'b.ts'), "export { a } from './a.js'\nexport type B = 1\n")
      writeFileSync(join(dir, 'c.ts'), "import { type B } from './b.js'\nexport const c: B = 1\n")
      const files = ['a.ts', 'b.ts', 'c.ts'].map((f) => join(dir, f))
      const all = cycles(files, () => true)
      expect(all).toHaveLength(1)
      expect(all[0]).toMatch(/a\.ts → \S*b\.ts → \S*a\.ts$/)
      expect(cycles(files, (e) => !e.typeOnly)).toEqual([])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('no run-time import cycle anywhere in src/', () => {
    expect(cycles(sourceFiles(SRC), (e) => !e.typeOnly)).toEqual([])
  })

  it('no import cycle at all in src/cli/ (type imports included)', () => {
    expect(cycles(sourceFiles(join(SRC, 'cli')), () => true)).toEqual([])
  })

  it('no test asserts on wall-clock time (timings belong in scripts/bench/)', () => {
    const ROOT = fileURLToPath(new URL('..', import.meta.url))
    const tests = [...allFiles(SRC), ...allFiles(join(ROOT, 'test'))].filter((f) => f.endsWith('.test.ts'))
    expect(tests.length).toBeGreaterThan(50)
    const clocked = tests.filter((f) => /performance\.now\(\)|Date\.now\(\)\s*-|process\.hrtime/.test(readFileSync(f, 'utf8')))
    expect(clocked.map((f) => relative(ROOT, f))).toEqual([])
  })

  it('the CLI reaches the accounts through src/accounts/, never through the HTTP routes (src/server/routes/)', () => {
    const files = allFiles(join(SRC, 'cli')).filter((f) => f.endsWith('.ts'))
    expect(files.length).toBeGreaterThan(10)
    expect(importsFrom(files, [join(SRC, 'server', 'routes')])).toEqual([])
    // The admin command does reach the account module (so an empty answer above is not a parser that sees nothing).
    expect(importsFrom(files, [join(SRC, 'accounts')]).length).toBeGreaterThan(0)
  })

  it('src/accounts/ (keys, ledger, plans, records, views) depends on neither the server nor the CLI', () => {
    const files = allFiles(join(SRC, 'accounts')).filter((f) => f.endsWith('.ts'))
    expect(files.map((f) => relative(SRC, f)).sort()).toEqual(expect.arrayContaining(['accounts/keys.ts', 'accounts/ledger.ts', 'accounts/plans.ts']))
    expect(importsFrom(files, [join(SRC, 'server'), join(SRC, 'cli')])).toEqual([])
  })

  it('UsageError is defined once (src/cli/shared.ts)', () => {
    expect(definitions(/class UsageError\b/)).toEqual(['cli/shared.ts'])
  })

  it('one semaphore (src/semaphore.ts), used by the DNS source and the bulk engine; no hand-rolled acquire/release', () => {
    expect(definitions(/class Semaphore\b/)).toEqual(['semaphore.ts'])
    expect(definitions(/function (acquire|release)\s*\(/)).toEqual([])
    // Queues of waiters: the semaphore's, and the SMTP session pool's (it hands out pooled sessions per mail-server
    // address, with idle reuse and abort — not bare slots).
    expect(definitions(/\bwaiters\s*[:=]/).sort()).toEqual(['semaphore.ts', 'sources/smtp/pool.ts'])
    expect(definitions(/from '\.\.\/semaphore\.js'/).sort()).toEqual(['bulk/schedule.ts', 'sources/dns.ts'])
  })

  it('no Map drops its oldest key through `.keys().next()`: a Map keeps deleted slots until it is rehashed, so at capacity each such eviction scans them (4.7 µs an insert at 10,000 keys); bounded maps are lru-cache', () => {
    expect(definitions(/\.keys\(\)\.next\(\)/)).toEqual([])
  })

  it('the repository explains itself: no comment or text points at documents outside it (DESIGN.md, the spec)', () => {
    const ROOT = fileURLToPath(new URL('..', import.meta.url))
    const files = ['src', 'test', 'scripts', 'examples', 'bin', 'docs']
      .flatMap((d) => allFiles(join(ROOT, d)))
      .concat([join(ROOT, 'README.md')])
      .filter((f) => /\.(ts|js|md|json|yaml)$/.test(f) && !f.includes(`${join('test', 'fixtures')}`) && !f.endsWith('source-structure.test.ts'))
    expect(files.length).toBeGreaterThan(200)
    const outside = /DESIGN\.md|service-api\.md|\.\.\/shared\/|\bthe spec\b|\bspec's\b|\(spec(?!: string)[:"\s]/i
    const hits = files.flatMap((f) =>
      readFileSync(f, 'utf8')
        .split('\n')
        .flatMap((line, i) => (outside.test(line) ? [`${relative(ROOT, f)}:${i + 1}: ${line.trim()}`] : [])),
    )
    expect(hits).toEqual([])
  })
})

const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** The repository's code files (TypeScript and JavaScript) in the folders people read, build output and packages left out. */
function codeFiles(): string[] {
  return ['src', 'test', 'scripts', 'examples', 'bin']
    .flatMap((d) => allFiles(join(ROOT, d)))
    .concat([join(ROOT, 'vitest.config.ts'), join(ROOT, 'tsup.config.ts')])
    .filter((f) => /\.(ts|mts|cts|js|mjs|cjs)$/.test(f) && !f.split(sep).includes('node_modules') && !f.split(sep).includes('dist'))
}

interface Comment {
  line: number
  text: string
  /** Whether only white space precedes it on its line (a `//` comment that does not trail code). */
  ownLine: boolean
}

const commentCache = new Map<string, Comment[]>()

/** The comments of a file with the line each starts on (every comment is the leading trivia of some token). */
function commentsOf(file: string): Comment[] {
  const cached = commentCache.get(file)
  if (cached) return cached
  const text = readFileSync(file, 'utf8')
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const seen = new Map<number, ts.CommentRange>()
  const visit = (n: ts.Node) => {
    for (const r of ts.getLeadingCommentRanges(text, n.getFullStart()) ?? []) seen.set(r.pos, r)
    for (const c of n.getChildren(sf)) visit(c)
  }
  visit(sf)
  const comments = [...seen.values()]
    .sort((a, b) => a.pos - b.pos)
    .map((r) => ({ line: sf.getLineAndCharacterOfPosition(r.pos).line + 1, text: text.slice(r.pos, r.end), ownLine: /^\s*$/.test(text.slice(text.lastIndexOf('\n', r.pos - 1) + 1, r.pos)) }))
  commentCache.set(file, comments)
  return comments
}

/** Each line of each comment of `files`, as `path:line: text`, that `bad` matches. */
function commentLines(files: string[], bad: { test(line: string): boolean }): string[] {
  return files.flatMap((f) =>
    commentsOf(f).flatMap((c) =>
      c.text.split('\n').flatMap((l, i) => (bad.test(l) ? [`${relative(ROOT, f)}:${c.line + i}: ${l.trim()}`] : [])),
    ),
  )
}

/** Paths of a person's or a build machine's folders: they mean nothing on another machine. */
const MACHINE_PATH = /(?<![\w.~-])\/work\/|\/home\/\w|\/Users\/\w|(?<![\w.~-])\/root\/|\b[A-Z]:\\\\?(?!x[0-9A-F]{2})[A-Za-z][\w .-]*\\/

/** Where the repository's tracking, briefing or a person's machine shows through: issue numbers, specs, notes, home folders. */
const OUTSIDE_WORDS = /\bissues? #?\d+\b|\bspec\s*["“§]|\bthe spec\b|\bresearch[- ]notes?\b/i
const CITES_OUTSIDE = { test: (line: string) => OUTSIDE_WORDS.test(line) || MACHINE_PATH.test(line) }

/** The words of a comment: runs of non-space characters holding a letter or a digit (the `*` margins do not count). */
const wordCount = (text: string) => (text.match(/\S+/g) ?? []).filter((w) => /[\p{L}\p{N}]/u.test(w)).length

/**
 * The comment blocks of a file with their words: each `/* … *\/` comment, and each run of `//` comments on lines of
 * their own one under the other (as scripts/storage-census.ts counts them).
 */
function commentBlocks(file: string): Array<{ line: number; words: number }> {
  const out: Array<{ line: number; words: number; last: number; run: boolean }> = []
  for (const c of commentsOf(file)) {
    const prev = out[out.length - 1]
    const words = wordCount(c.text.startsWith('//') ? c.text.slice(2) : c.text.slice(2, -2))
    if (c.text.startsWith('//') && prev?.run && prev.last === c.line - 1 && c.ownLine) Object.assign(prev, { last: c.line, words: prev.words + words })
    else out.push({ line: c.line, words, last: c.line, run: c.text.startsWith('//') })
  }
  return out.map(({ line, words }) => ({ line, words }))
}

/** Most words a comment block of src/ may have: a file header or an API's doc says what, docs/decisions.md says why. */
const MAX_COMMENT_WORDS = 100

/** The folders at the top of the repository: a path that starts with one of them names a file of the repository. */
const TOP = /^(src|test|scripts|docs|data|examples|bin|\.ci)\//

/**
 * The names of repository files a comment mentions, with the line (from the comment's first) they are on: paths from
 * a file's folder (starting with a dot), from the root (under a folder of {@link TOP}), and TypeScript sources by
 * name or tail of path. Other names (a user's CSV file, a package's JavaScript, an upstream test table) and URLs are
 * not checked.
 */
function fileMentions(comment: string): Array<{ offset: number; name: string }> {
  const out: Array<{ offset: number; name: string }> = []
  const re = /(?<![\w@/.:*-])(?:\.{1,2}\/)*[\w-][\w.-]*(?:\/[\w.-]+)*\.(?:ts|js|mjs|cjs|md|json|txt|csv|yaml|yml|mmdb|html|sh)(?![\w/-])/g
  for (const m of comment.matchAll(re)) {
    const before = comment.slice(0, m.index)
    if (/https?:\/\/\S*$|\bwww\.\S*$/.test(before)) continue
    if (!m[0].startsWith('.') && !TOP.test(m[0]) && !/\.ts$/.test(m[0])) continue
    out.push({ offset: before.split('\n').length - 1, name: m[0] })
  }
  return out
}

/** The repository's files (relative paths, forward slashes), for resolving bare names and tails of paths. */
function repositoryFiles(): string[] {
  return ['src', 'test', 'scripts', 'examples', 'bin', 'docs', 'data', '.ci']
    .flatMap((d) => {
      try {
        return allFiles(join(ROOT, d))
      } catch {
        return []
      }
    })
    .concat(readdirSync(ROOT).map((f) => join(ROOT, f)))
    .filter((f) => !f.split(sep).includes('node_modules'))
    .map((f) => relative(ROOT, f).split(sep).join('/'))
}

/**
 * True when `name`, mentioned in a comment of `file`, is a file of the repository: `./` and `../` names from the
 * file's folder, names under a top folder from the root, other TypeScript names as the name or tail of some file's
 * path. A `.js` name also stands for its `.ts` source.
 */
function namesExisting(file: string, name: string, known: string[]): boolean {
  const variants = [name, name.replace(/\.js$/, '.ts'), name.replace(/\.mjs$/, '.mts'), name.replace(/\.cjs$/, '.cts')]
  if (name.startsWith('.')) return variants.some((v) => known.includes(relative(ROOT, resolve(dirname(file), v)).split(sep).join('/')))
  if (TOP.test(name)) return variants.some((v) => known.includes(v))
  return variants.some((v) => known.some((k) => k === v || k.endsWith(`/${v}`)))
}

/** Reading every comment of the repository takes seconds, and many more on a loaded machine. */
const SLOW = 120_000

describe('comments', () => {
  it('cite nothing outside the repository: no issue number, no spec, no research note, no path of a machine', { timeout: SLOW }, () => {
    const files = codeFiles()
    expect(files.length).toBeGreaterThan(300)
    expect(commentLines(files, CITES_OUTSIDE)).toEqual([])
  })

  it('the finder of outside citations knows them when it sees them (so an empty answer means something)', () => {
    const seen = ['// issue 10 says', '// fixed in issue #12', '/* see research note §2.6 */', '// spec "11 attempts"', '// as the spec says', '// as in /work/shared/x.md', '// built in /work/build/x', '// /home/ann/x', '// /Users/ann/x', '// C:\\Users\\me', '// D:\\data\\x.csv']
    for (const l of seen) expect(CITES_OUTSIDE.test(l), l).toBe(true)
    for (const l of ['// the issuer of 10 keys', '// spec: string', '// respects "x"', '// /tmp/riskcheck-', '// a specification', '// ./work/x and src/network/x', '// at 10:30 a.m.', '// /\\s:\\s+\\w/', '// "a:\\xEF\\xBBgarbage"']) expect(CITES_OUTSIDE.test(l), l).toBe(false)
  })

  it('src/, scripts/, test fixtures and docs carry no path of another machine (code and data, not only comments) and cite no research note', () => {
    const files = ['src', 'scripts', join('test', 'fixtures'), 'docs']
      .flatMap((d) => allFiles(join(ROOT, d)))
      .filter((f) => !f.split(sep).includes('node_modules'))
      .filter((f) => !readFileSync(f).subarray(0, 8000).includes(0)) // text files only
    expect(files.length).toBeGreaterThan(300)
    const machine = { test: (line: string) => MACHINE_PATH.test(line) || /\bresearch[- ]notes?\b/i.test(line) }
    const hits = files.flatMap((f) =>
      readFileSync(f, 'utf8')
        .split('\n')
        .flatMap((line, i) => (machine.test(line) ? [`${relative(ROOT, f)}:${i + 1}: ${line.trim().slice(0, 160)}`] : [])),
    )
    expect(hits).toEqual([])
  })

  it(`comment blocks of src/ have at most ${MAX_COMMENT_WORDS} words (the reasoning goes once into docs/decisions.md)`, { timeout: SLOW }, () => {
    const long = sourceFiles(SRC).flatMap((f) => commentBlocks(f).flatMap((b) => (b.words > MAX_COMMENT_WORDS ? [{ file: relative(ROOT, f).split(sep).join('/'), at: `${relative(ROOT, f).split(sep).join('/')}:${b.line} (${b.words} words)` }] : [])))
    expect(long.map((b) => b.at)).toEqual([])
  })

  it('the comment-block counter joins a run of `//` lines, not a trailing one, and counts words, not margins (so an empty answer means something)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'riskcheck-comments-'))
    try {
      const file = join(dir, 'a.ts')
      writeFileSync(file, '/**\n * one two\n * three — 4\n */\nconst a = 1 // five\n// six seven\n// eight\n\n// nine\nexport { a }\n')
      expect(commentBlocks(file)).toEqual([
        { line: 1, words: 4 },
        { line: 6, words: 3 },
        { line: 9, words: 1 },
      ])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('name only files that exist', { timeout: SLOW }, () => {
    const known = repositoryFiles()
    const missing = codeFiles().flatMap((f) =>
      commentsOf(f).flatMap((c) =>
        fileMentions(c.text)
          .filter((m) => !namesExisting(f, m.name, known))
          .map((m) => `${relative(ROOT, f)}:${c.line + m.offset}: ${m.name}`),
      ),
    )
    expect(missing).toEqual([])
  })

  it('cite docs/decisions.md by sections and rows it has', { timeout: SLOW }, () => {
    const doc = readFileSync(join(ROOT, 'docs', 'decisions.md'), 'utf8')
    const sections = new Map<string, string>()
    for (const part of doc.split(/^## /m).slice(1)) sections.set(part.slice(0, part.indexOf('\n')).trim(), part)
    const cites = /decisions\.md,?\s+"([^"]+)"((?:\s*(?:→|and)\s*"[^"]+")*)/g
    let seen = 0
    const wrong = codeFiles().flatMap((f) =>
      commentsOf(f).flatMap((c) => {
        const text = c.text.replace(/^\s*(\/\/|\/\*\*?|\*\/?)\s?/gm, '').replace(/\s+/g, ' ')
        return [...text.matchAll(cites)].flatMap((m) => {
          seen++
          const section = sections.get(m[1]!)
          const rows = [...(m[2] ?? '').matchAll(/"([^"]+)"/g)].map((r) => r[1]!)
          if (!section) return [`${relative(ROOT, f)}:${c.line}: no section "${m[1]}"`]
          return rows.filter((r) => !new RegExp(`^\\| ${r.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\|`, 'm').test(section)).map((r) => `${relative(ROOT, f)}:${c.line}: no row "${r}" in "${m[1]}"`)
        })
      }),
    )
    expect(seen).toBeGreaterThan(5)
    expect(wrong).toEqual([])
  })

  it('the file-name check finds names and tells missing ones (so an empty answer means something)', { timeout: SLOW }, () => {
    const here = join(ROOT, 'src', 'server', 'store', 'sqlite', 'bulk.ts')
    const known = repositoryFiles()
    const comment = '/** see ../ledger.ts and `src/cli/shared.ts`,\n * not https://x.org/a.ts, @scope/p.ts, results.csv or ipaddr.js */'
    expect(fileMentions(comment)).toEqual([
      { offset: 0, name: '../ledger.ts' },
      { offset: 0, name: 'src/cli/shared.ts' },
    ])
    expect(namesExisting(here, '../ledger.ts', known)).toBe(false)
    expect(namesExisting(here, '../../../accounts/ledger.ts', known)).toBe(true)
    expect(namesExisting(here, './store.js', known)).toBe(true)
    expect(namesExisting(here, 'accounts/ledger.ts', known)).toBe(true)
    expect(namesExisting(here, 'no-such-file.ts', known)).toBe(false)
  })
})

describe('outage suites', () => {
  it('every test file that starts a private PostgreSQL cluster skips without one (and fails in CI) through test/pg-cluster.ts', () => {
    const TEST = fileURLToPath(new URL('.', import.meta.url))
    const clustered = allFiles(TEST).filter((f) => f.endsWith('.test.ts') && /createPgCluster\(/.test(readFileSync(f, 'utf8')))
    expect(clustered.length).toBeGreaterThanOrEqual(1)
    for (const f of clustered) expect(readFileSync(f, 'utf8'), relative(TEST, f)).toMatch(/pgClusterAvailable\(/)
  })
})

describe('browser suites', () => {
  it('every test file that drives a browser skips without one (and fails in CI) through test/browser-env.ts', () => {
    const TEST = fileURLToPath(new URL('.', import.meta.url))
    const launching = allFiles(TEST).filter((f) => f.endsWith('.test.ts') && /startHarness\(|chromium\.launch\(/.test(readFileSync(f, 'utf8')))
    expect(launching.length).toBeGreaterThanOrEqual(10)
    for (const f of launching) expect(readFileSync(f, 'utf8'), relative(TEST, f)).toMatch(/describe\.skipIf\(!HAS_BROWSER\)/)
  })
})

describe('code a newcomer can hold (the counters of scripts/storage-census.ts)', () => {
  const sources = load()

  it('no function of src/ spans more than 150 lines', { timeout: SLOW }, () => {
    const fns = functions(sources)
    // the counter sees the functions (so an empty answer means something): thousands, the longest near the bound
    expect(fns.length).toBeGreaterThan(1000)
    expect(fns[0]!.lines).toBeGreaterThan(100)
    expect(fns.filter((f) => f.lines > 150).map((f) => `${f.name} ${f.lines} lines (${f.where})`)).toEqual([])
  })

  it('one migration runner per engine: SQLite in server/store/sqlite/, PostgreSQL in server/store/postgres/', { timeout: SLOW }, () => {
    const runners = migrationRunners(sources)
    expect(runners).toHaveLength(2)
    expect(runners.filter((r) => r.startsWith('server/store/sqlite/'))).toHaveLength(1)
    expect(runners.filter((r) => r.startsWith('server/store/postgres/'))).toHaveLength(1)
  })
})
