/**
 * Figures of the storage layer and of the source's shape, read from the code (src/, tests excluded), so they can be
 * quoted before and after a restructuring: storage lines per engine, migration runners and types, the longest
 * functions, long comment blocks, and the helpers written more than once. How each figure is found is printed with it.
 *
 *   npx tsx scripts/storage-census.ts [--top 10] [--json]
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import ts from 'typescript'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const SRC = join(ROOT, 'src')
const ENGINES = ['sqlite', 'postgres', 'memory'] as const
type Engine = (typeof ENGINES)[number]

interface Source {
  /** Path relative to src/, with forward slashes. */
  path: string
  text: string
  sf: ts.SourceFile
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((f) => {
      const p = join(dir, f)
      if (statSync(p).isDirectory()) return sourceFiles(p)
      return p.endsWith('.ts') && !p.endsWith('.test.ts') ? [p] : []
    })
}

export function load(): Source[] {
  return sourceFiles(SRC).map((file) => {
    const text = readFileSync(file, 'utf8')
    return { path: relative(SRC, file).split(sep).join('/'), text, sf: ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true) }
  })
}

const lineOf = (sf: ts.SourceFile, pos: number) => sf.getLineAndCharacterOfPosition(pos).line + 1
const linesOf = (text: string) => text.split('\n').length - (text.endsWith('\n') ? 1 : 0)

// ---------------------------------------------------------------------------------------------------------------
// Storage code per engine

/** The engine a name or a path names, if any. */
function engineNamed(name: string): Engine | undefined {
  if (/sqlite/i.test(name)) return 'sqlite'
  if (/postgres|(^|[^a-z])pg([A-Z_-]|$)|Pg[A-Z]/.test(name)) return 'postgres'
  if (/memory/i.test(name)) return 'memory'
  return undefined
}

const SQL = /\b(INSERT INTO|CREATE TABLE|DELETE FROM|SELECT\s[\s\S]*?\sFROM|UPDATE\s+\w+\s+SET)\b/

/** True when a string or template literal of the file holds SQL. */
function holdsSql(sf: ts.SourceFile): boolean {
  let found = false
  const visit = (n: ts.Node) => {
    if (found) return
    if ((ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) && SQL.test(n.text)) found = true
    else if (ts.isTemplateExpression(n) && SQL.test(n.getText(sf))) found = true
    else ts.forEachChild(n, visit)
  }
  visit(sf)
  return found
}

/**
 * The engines a file points at: the driver packages it imports (statically, type-only included, or dynamically) and
 * the dialect of its SQL (SQLite's `STRICT` tables, `PRAGMA`, `INSERT OR …`; PostgreSQL's `$1`, `BIGSERIAL`, row locks).
 */
function drivers(sf: ts.SourceFile): Set<Engine> {
  const out = new Set<Engine>()
  const dialect = (sql: string) => {
    if (!SQL.test(sql)) return
    if (/\bSTRICT\b|\bPRAGMA\b|INSERT OR (IGNORE|REPLACE)|AUTOINCREMENT/.test(sql)) out.add('sqlite')
    if (/\$\d+\b|BIGSERIAL|FOR UPDATE|SKIP LOCKED/.test(sql)) out.add('postgres')
  }
  const note = (name: string) => {
    if (name === 'better-sqlite3') out.add('sqlite')
    if (name === 'pg') out.add('postgres')
  }
  const visit = (n: ts.Node) => {
    if (ts.isImportDeclaration(n) && ts.isStringLiteral(n.moduleSpecifier)) note(n.moduleSpecifier.text)
    else if (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) dialect(n.text)
    else if (ts.isTemplateExpression(n)) dialect(n.getText(sf))
    else if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword && n.arguments[0] && ts.isStringLiteral(n.arguments[0])) note(n.arguments[0].text)
    ts.forEachChild(n, visit)
  }
  visit(sf)
  return out
}

/**
 * A storage file: one in a folder named `store` (or below), one whose path names an engine (`sqlite`, `postgres`,
 * `memory`), or one with SQL in its strings.
 */
function isStorageFile(s: Source): boolean {
  return /(^|\/)store(\/|$)/.test(dirname(s.path)) || engineNamed(s.path) !== undefined || holdsSql(s.sf)
}

/** The names a top-level statement declares. */
function declaredNames(st: ts.Statement): string[] {
  if (ts.isVariableStatement(st)) return st.declarationList.declarations.map((d) => d.name.getText())
  const named = st as ts.Statement & { name?: ts.Node }
  return named.name ? [named.name.getText()] : []
}

interface Attribution {
  /** Lines per engine, and lines shared by engines (contracts, helpers) in the storage files. */
  lines: Record<Engine | 'shared', number>
  /** Per engine: file → lines of the file counted for the engine. */
  files: Record<Engine | 'shared', Map<string, number>>
}

/**
 * Lines per engine. A file whose path names an engine counts for it whole. Otherwise each top-level statement (with its
 * leading comments) counts for the engine its declared name names (`createSqliteOrgPolicyStore`); the rest of the file
 * counts for the one engine its names and driver imports point at, or as shared when they point at several or none.
 */
function attribute(storage: Source[]): Attribution {
  const lines = { sqlite: 0, postgres: 0, memory: 0, shared: 0 }
  const files = { sqlite: new Map<string, number>(), postgres: new Map<string, number>(), memory: new Map<string, number>(), shared: new Map<string, number>() }
  const add = (e: Engine | 'shared', path: string, n: number) => {
    if (n <= 0) return
    lines[e] += n
    files[e].set(path, (files[e].get(path) ?? 0) + n)
  }
  for (const s of storage) {
    const total = linesOf(s.text)
    const byPath = engineNamed(s.path.split('/').pop()!) ?? engineNamed(dirname(s.path))
    if (byPath) {
      add(byPath, s.path, total)
      continue
    }
    const pointed = drivers(s.sf)
    const named: Array<[Engine, number]> = []
    let rest = total
    for (const st of s.sf.statements) {
      const e = declaredNames(st).map(engineNamed).find((x) => x !== undefined)
      if (!e) continue
      const n = lineOf(s.sf, st.getEnd()) - lineOf(s.sf, st.getFullStart()) + (s.sf.text[st.getFullStart()] === '\n' ? 0 : 1)
      named.push([e, n])
      pointed.add(e)
      rest -= n
    }
    for (const [e, n] of named) add(e, s.path, n)
    const only = pointed.size === 1 ? [...pointed][0]! : 'shared'
    add(only, s.path, rest)
  }
  return { lines, files }
}

// ---------------------------------------------------------------------------------------------------------------
// Migrations

/**
 * Migration runners: the functions that run each migration's SQL (`.exec(m.sql)`, `.query(m.sql)`) inside a loop —
 * the innermost function around that loop.
 */
export function migrationRunners(sources: Source[]): string[] {
  const found = new Set<string>()
  for (const s of sources) {
    const visit = (n: ts.Node) => {
      if (ts.isCallExpression(n) && /\.(exec|query)$/.test(n.expression.getText(s.sf)) && n.arguments.length === 1 && /^\w+\.sql$/.test(n.arguments[0]!.getText(s.sf))) {
        let p: ts.Node | undefined = n.parent
        while (p && !ts.isIterationStatement(p, false) && !(ts.isCallExpression(p) && /\.forEach$/.test(p.expression.getText(s.sf)))) p = p.parent
        while (p && !ts.isFunctionLike(p)) p = p.parent
        if (p) found.add(`${s.path}:${lineOf(s.sf, p.getStart(s.sf))} ${functionName(p as ts.SignatureDeclaration)}`)
      }
      ts.forEachChild(n, visit)
    }
    visit(s.sf)
  }
  return [...found]
}

/**
 * Migration types: declared types named `…Migration` with a `version` member, and type literals written in place
 * with `version` and `sql` members.
 */
function migrationTypes(sources: Source[]): string[] {
  const found: string[] = []
  const members = (n: ts.Node) => {
    const list = ts.isInterfaceDeclaration(n) || ts.isTypeLiteralNode(n) ? n.members : ts.isTypeAliasDeclaration(n) && ts.isTypeLiteralNode(n.type) ? n.type.members : undefined
    return new Set((list ?? []).map((m) => m.name?.getText() ?? ''))
  }
  for (const s of sources) {
    const visit = (n: ts.Node) => {
      if ((ts.isInterfaceDeclaration(n) || ts.isTypeAliasDeclaration(n)) && /Migration$/.test(n.name.text) && (members(n).has('version') || members(n).has('sql'))) {
        found.push(`${s.path}:${lineOf(s.sf, n.getStart(s.sf))} ${n.name.text}`)
        return
      }
      if (ts.isTypeLiteralNode(n) && !ts.isTypeAliasDeclaration(n.parent)) {
        const m = members(n)
        if (m.has('version') && m.has('sql')) found.push(`${s.path}:${lineOf(s.sf, n.getStart(s.sf))} { ${[...m].join('; ')} }`)
      }
      ts.forEachChild(n, visit)
    }
    visit(s.sf)
  }
  return found
}

// ---------------------------------------------------------------------------------------------------------------
// Functions

export interface FunctionInfo {
  name: string
  where: string
  lines: number
  /** Functions nested inside it (any depth). */
  inner: number
}

function functionName(n: ts.SignatureDeclaration): string {
  if (n.name) return n.name.getText()
  const p = n.parent
  if (ts.isVariableDeclaration(p) || ts.isPropertyAssignment(p) || ts.isPropertyDeclaration(p)) return p.name.getText()
  if (ts.isCallExpression(p)) return `<callback of ${p.expression.getText().slice(0, 40)}>`
  if (ts.isExportAssignment(p)) return '<default export>'
  return '<anonymous>'
}

const isMeasured = (n: ts.Node): n is ts.SignatureDeclaration & { body?: ts.Node } =>
  (ts.isFunctionDeclaration(n) || ts.isFunctionExpression(n) || ts.isArrowFunction(n) || ts.isMethodDeclaration(n) || ts.isConstructorDeclaration(n) || ts.isGetAccessorDeclaration(n) || ts.isSetAccessorDeclaration(n)) &&
  (n as { body?: ts.Node }).body !== undefined

/** Every function with a body (declarations, expressions, arrows, methods, accessors, constructors), by lines it spans. */
export function functions(sources: Source[]): FunctionInfo[] {
  const out: FunctionInfo[] = []
  for (const s of sources) {
    const visit = (n: ts.Node): number => {
      let inner = 0
      ts.forEachChild(n, (c) => {
        inner += visit(c)
      })
      if (!isMeasured(n)) return inner
      const start = lineOf(s.sf, n.getStart(s.sf))
      out.push({ name: functionName(n), where: `${s.path}:${start}`, lines: lineOf(s.sf, n.getEnd()) - start + 1, inner })
      return inner + 1
    }
    visit(s.sf)
  }
  return out.sort((a, b) => b.lines - a.lines)
}

// ---------------------------------------------------------------------------------------------------------------
// Comments

interface CommentBlock {
  where: string
  words: number
}

/** Every comment of a file, once each, in order: the leading comments of each token (the end-of-file one included). */
function commentsOf(sf: ts.SourceFile): ts.CommentRange[] {
  const seen = new Map<number, ts.CommentRange>()
  const visit = (n: ts.Node) => {
    for (const r of ts.getLeadingCommentRanges(sf.text, n.getFullStart()) ?? []) seen.set(r.pos, r)
    for (const c of n.getChildren(sf)) visit(c)
  }
  visit(sf)
  return [...seen.values()].sort((a, b) => a.pos - b.pos)
}

/**
 * Comment blocks: each `/* … *\/` comment, and each run of `//` comments on consecutive lines. Words are the runs of
 * non-space characters holding a letter or a digit (the `*` margins do not count).
 */
function commentBlocks(sources: Source[]): CommentBlock[] {
  const out: CommentBlock[] = []
  const words = (t: string) => (t.match(/\S+/g) ?? []).filter((w) => /[\p{L}\p{N}]/u.test(w)).length
  for (const s of sources) {
    let run: { start: number; last: number; words: number } | undefined
    const flush = () => {
      if (run) out.push({ where: `${s.path}:${run.start}`, words: run.words })
      run = undefined
    }
    for (const r of commentsOf(s.sf)) {
      const line = lineOf(s.sf, r.pos)
      const text = s.text.slice(r.pos, r.end)
      if (r.kind === ts.SyntaxKind.MultiLineCommentTrivia) {
        flush()
        out.push({ where: `${s.path}:${line}`, words: words(text.slice(2, -2)) })
      } else if (run && run.last === line - 1 && /^\s*$/.test(s.text.slice(s.text.lastIndexOf('\n', r.pos - 1) + 1, r.pos))) Object.assign(run, { last: line, words: run.words + words(text.slice(2)) })
      else {
        flush()
        run = { start: line, last: line, words: words(text.slice(2)) }
      }
    }
    flush()
  }
  return out
}

// ---------------------------------------------------------------------------------------------------------------
// Written more than once

/** Declarations of a type or interface named `name`. */
function typeDeclarations(sources: Source[], names: RegExp): string[] {
  const out: string[] = []
  for (const s of sources)
    for (const st of s.sf.statements)
      if ((ts.isTypeAliasDeclaration(st) || ts.isInterfaceDeclaration(st)) && names.test(st.name.text)) out.push(`${s.path}:${lineOf(s.sf, st.getStart(s.sf))} ${st.name.text}`)
  return out
}

/** Top-level or nested functions whose name says they run a callback in a transaction (`withTransaction`, `inTx` …). */
function transactionHelpers(sources: Source[]): string[] {
  const out: string[] = []
  for (const s of sources) {
    const visit = (n: ts.Node) => {
      if (isMeasured(n) && /^(with|in|run)(Transaction|Tx)$|^transaction$/i.test(functionName(n)) && n.parameters.some((p) => p.type && ts.isFunctionTypeNode(p.type)))
        out.push(`${s.path}:${lineOf(s.sf, n.getStart(s.sf))} ${functionName(n)}`)
      ts.forEachChild(n, visit)
    }
    visit(s.sf)
  }
  return out
}

/** String literals that match `pattern`, where they are. */
function literalsMatching(sources: Source[], pattern: RegExp): string[] {
  const out: string[] = []
  for (const s of sources) {
    const visit = (n: ts.Node) => {
      if ((ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n) || ts.isTemplateExpression(n)) && pattern.test(n.getText(s.sf))) out.push(`${s.path}:${lineOf(s.sf, n.getStart(s.sf))}`)
      else ts.forEachChild(n, visit)
    }
    visit(s.sf)
  }
  return out
}

/** Array or Set literals of the final bulk job statuses (`completed`, `failed`, `cancelled`, `expired`…). */
function finalStatusSets(sources: Source[]): string[] {
  const out: string[] = []
  for (const s of sources) {
    const visit = (n: ts.Node) => {
      if (ts.isArrayLiteralExpression(n)) {
        const items = n.elements.filter(ts.isStringLiteral).map((e) => e.text)
        if (items.length >= 2 && items.includes('completed') && items.includes('failed') && !items.includes('queued') && !items.includes('running')) out.push(`${s.path}:${lineOf(s.sf, n.getStart(s.sf))} [${items.join(', ')}]`)
      }
      if (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) {
        if (/IN \('completed', 'failed'/.test(n.text)) out.push(`${s.path}:${lineOf(s.sf, n.getStart(s.sf))} SQL IN (…)`)
      }
      ts.forEachChild(n, visit)
    }
    visit(s.sf)
  }
  return out
}

// ---------------------------------------------------------------------------------------------------------------

function main(): void {
  const { values } = parseArgs({ options: { top: { type: 'string' }, json: { type: 'boolean' } } })
  const top = Number(values.top ?? 10)
  const sources = load()
  const storage = sources.filter(isStorageFile)
  const { lines, files } = attribute(storage)
  const fns = functions(sources)
  const comments = commentBlocks(sources)
  const runners = migrationRunners(sources)
  const types = migrationTypes(sources)
  const twice = {
    queryable: typeDeclarations(sources, /^(Pg)?Queryable$/),
    awaitable: typeDeclarations(sources, /^(Awaitable|MaybePromise)$/),
    transactionHelpers: transactionHelpers(sources),
    insertIntoEvents: literalsMatching(sources, /INSERT( OR IGNORE)? INTO events\b/),
    finalStatusSets: finalStatusSets(sources),
    engineSniffing: sources.flatMap((s) => (s.text.match(/instanceof pg\.Pool|memoryStoreInternals\(store\)|as Partial<SqliteStore>/g) ?? []).map((m) => `${s.path} ${m}`)),
  }
  const figures = {
    src: { files: sources.length, lines: sources.reduce((n, s) => n + linesOf(s.text), 0) },
    storage: {
      files: storage.length,
      lines,
      perEngine: Object.fromEntries(
        [...ENGINES, 'shared' as const].map((e) => {
          const list = [...files[e].entries()].sort((a, b) => a[0].localeCompare(b[0]))
          return [e, { lines: lines[e], files: list.length, folders: [...new Set(list.map(([p]) => dirname(p)))].sort(), list }]
        }),
      ),
    },
    migrations: { runners, types },
    functions: {
      count: fns.length,
      over150: fns.filter((f) => f.lines > 150).length,
      over100: fns.filter((f) => f.lines > 100).length,
      longest: fns.slice(0, top),
      over150List: fns.filter((f) => f.lines > 150),
    },
    comments: {
      blocks: comments.length,
      over100: comments.filter((c) => c.words > 100).length,
      over200: comments.filter((c) => c.words > 200).length,
      over200List: comments.filter((c) => c.words > 200).sort((a, b) => b.words - a.words),
      over100List: comments.filter((c) => c.words > 100 && c.words <= 200).sort((a, b) => b.words - a.words),
    },
    writtenMoreThanOnce: twice,
  }
  if (values.json) {
    console.log(JSON.stringify(figures, (_k, v) => (v instanceof Map ? Object.fromEntries(v) : v), 2))
    return
  }
  const p = console.log
  p(`riskcheck storage census — src/, tests excluded: ${figures.src.files} files, ${figures.src.lines} lines`)
  p('')
  p(`Storage code (${storage.length} files: in a store/ folder, an engine in the path, or SQL in the strings)`)
  for (const e of [...ENGINES, 'shared' as const]) {
    const x = figures.storage.perEngine[e]!
    p(`  ${e.padEnd(9)} ${String(x.lines).padStart(6)} lines in ${String(x.files).padStart(2)} files, ${x.folders.length} folders: ${x.folders.join(', ')}`)
    for (const [f, n] of x.list) p(`      ${String(n).padStart(5)}  ${f}`)
  }
  p('')
  p(`Migration runners: ${runners.length} (a function running each migration's SQL in a loop)`)
  for (const r of runners) p(`  ${r}`)
  p(`Migration types: ${types.length} (types named …Migration with a version or SQL, and in-place { version, sql } literals)`)
  for (const t of types) p(`  ${t}`)
  p('')
  p(`Functions: ${fns.length} (declarations, expressions, arrows, methods, accessors); over 150 lines: ${figures.functions.over150}; over 100 lines: ${figures.functions.over100}`)
  p(`The ${top} longest:`)
  for (const f of figures.functions.longest) p(`  ${String(f.lines).padStart(4)}  ${f.name} (${f.where}; ${f.inner} inner functions)`)
  const rest150 = figures.functions.over150List.slice(top)
  if (rest150.length) p(`Also over 150: ${rest150.map((f) => `${f.name} ${f.lines} (${f.where})`).join(', ')}`)
  p('')
  p(`Comment blocks: ${comments.length}; over 100 words: ${figures.comments.over100}; over 200 words: ${figures.comments.over200}`)
  p(`  over 200: ${figures.comments.over200List.map((c) => `${c.where} (${c.words})`).join(', ')}`)
  p(`  101–200: ${figures.comments.over100List.map((c) => `${c.where} (${c.words})`).join(', ')}`)
  p('')
  p('Written more than once:')
  p(`  Queryable types: ${twice.queryable.length}  ${twice.queryable.join(', ')}`)
  p(`  Awaitable/MaybePromise types: ${twice.awaitable.length}  ${twice.awaitable.join(', ')}`)
  p(`  transaction helpers (with/in/run Transaction taking a callback): ${twice.transactionHelpers.length}  ${twice.transactionHelpers.join(', ')}`)
  p(`  INSERT INTO events statements: ${twice.insertIntoEvents.length}  ${twice.insertIntoEvents.join(', ')}`)
  p(`  final bulk status sets: ${twice.finalStatusSets.length}  ${twice.finalStatusSets.join(', ')}`)
  p(`  engine told by inspecting the store: ${twice.engineSniffing.length}  ${twice.engineSniffing.join(', ')}`)
}

// run as a script, not when a test imports the counters
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main()
