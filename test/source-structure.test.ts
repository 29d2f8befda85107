/**
 * The shape of the source tree: no module imports itself through others at run time (anywhere in src/), the CLI has
 * no import loop at all (not even through types: the core and each command share ./shared.ts instead), what is
 * written once has one home (`UsageError`, the semaphore), and the account module (keys, ledger, plans, record views)
 * serves the HTTP routes and the CLI alike: the CLI never reaches into the routes, the module into neither.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

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
