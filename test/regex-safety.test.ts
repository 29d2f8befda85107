/**
 * Every regular expression in src/ is linear-time (README "Input handling"): each regex literal is found with the
 * TypeScript parser and checked by `recheck` (an automaton-based ReDoS checker with fuzzing as a fallback); the few
 * regexes built at run time are listed with why their input or pattern is safe, and checked where their patterns are
 * ours. This replaces timing hostile inputs, which a loaded machine makes unreliable.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { checkSync } from 'recheck'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { ROUTES } from '../src/server/routes/index.js'

const SRC = fileURLToPath(new URL('../src', import.meta.url))

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f)
    if (statSync(p).isDirectory()) return sourceFiles(p)
    return p.endsWith('.ts') && !p.endsWith('.test.ts') ? [p] : []
  })
}

interface Found {
  where: string
  source: string
  flags: string
}

/** Regex literals and `RegExp(...)` constructions of the source tree. */
function scan(): { literals: Found[]; built: string[] } {
  const literals: Found[] = []
  const built: string[] = []
  for (const file of sourceFiles(SRC)) {
    const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true)
    const where = (n: ts.Node) => `${relative(SRC, file)}:${sf.getLineAndCharacterOfPosition(n.getStart()).line + 1}`
    const visit = (n: ts.Node) => {
      if (n.kind === ts.SyntaxKind.RegularExpressionLiteral) {
        const text = n.getText()
        const end = text.lastIndexOf('/')
        literals.push({ where: where(n), source: text.slice(1, end), flags: text.slice(end + 1) })
      } else if ((ts.isNewExpression(n) || ts.isCallExpression(n)) && ts.isIdentifier(n.expression) && n.expression.text === 'RegExp') {
        built.push(relative(SRC, file))
      }
      ts.forEachChild(n, visit)
    }
    visit(sf)
  }
  return { literals, built }
}

/** recheck's verdict ('safe' | 'vulnerable' | 'unknown'), with the attack string when vulnerable. */
function verdict(source: string, flags: string): string {
  // `g`/`y` change where matching starts, not the automaton; recheck takes the others.
  const r = checkSync(source, flags.replace(/[gy]/g, ''), { timeout: 10_000 })
  return r.status === 'vulnerable' ? `vulnerable (${r.complexity.type}, attack ${JSON.stringify(r.attack.pattern)})` : r.status
}

/** Run-time regexes: the file, and why it is safe. */
const BUILT: Record<string, string> = {
  'server/request-guards.ts': 'route paths of our own route table, escaped; checked below',
  'sources/phone/format.ts': "libphonenumber's national-format patterns (trusted metadata), run on a parsed national number (digits only, at most 17)",
  'sources/phone/number-type.ts': "libphonenumber's numbering-plan type patterns (trusted metadata, the ones getType() runs), run on a parsed national number (digits only, at most 17)",
}

describe('regular expressions are linear-time', () => {
  const { literals, built } = scan()

  it('the checker catches catastrophic backtracking (so "safe" means something)', () => {
    expect(verdict('^(a+)+$', '')).toMatch(/^vulnerable \(exponential/)
    expect(verdict('^(\\w+\\s?)*$', '')).toMatch(/^vulnerable/)
    expect(verdict('^[a-z0-9.-]+$', 'i')).toBe('safe')
  })

  it('finds the regex literals of src/', () => {
    expect(literals.length).toBeGreaterThan(40)
  })

  it('every regex literal in src/ is safe', () => {
    const unsafe = literals.map((r) => ({ ...r, verdict: verdict(r.source, r.flags) })).filter((r) => r.verdict !== 'safe')
    expect(unsafe.map((r) => `${r.where} /${r.source}/${r.flags}: ${r.verdict}`)).toEqual([])
  })

  it('every regex built at run time is listed with its reason', () => {
    expect([...new Set(built)].sort()).toEqual(Object.keys(BUILT).sort())
  })

  it('the route patterns (built from the route table) are safe', async () => {
    const { createMethodTable } = await import('../src/server/request-guards.js')
    const table = createMethodTable()
    const patterns = new Set<string>()
    const original = RegExp
    // Capture the patterns the table builds, then check each.
    globalThis.RegExp = new Proxy(original, {
      construct(target, args: [string]) {
        patterns.add(args[0])
        return new target(...args)
      },
    })
    try {
      for (const r of ROUTES) table.add(r.url, r.method)
    } finally {
      globalThis.RegExp = original
    }
    expect(patterns.size).toBeGreaterThan(5)
    for (const p of patterns) expect(verdict(p, ''), p).toBe('safe')
  })
})
