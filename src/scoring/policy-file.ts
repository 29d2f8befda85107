/**
 * Policy files: the overrides `createPolicy` takes, as JSON or YAML (docs/scoring.md "Policies as files and
 * backtesting", docs/policy.schema.json). Loading validates completely (each problem with path and line) and gives the
 * policy, its canonical JSON and its version id: `pol_` + 16 hex digits of the SHA-256 of the canonical JSON, the same
 * for the same overrides in any syntax, key order or comments.
 *
 * @example
 * const { policy, version } = await loadPolicyFile('policy.yaml')
 */
import { createHash } from 'node:crypto'
import { readFile, stat } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { createPolicy, PolicyError, type PolicyOverrides } from './engine.js'
import { FACTOR_CODES } from './factors.js'
import { MAX_POLICY_DEPTH, TOO_DEEP, validatePolicy, type PolicyIssue } from './policy-validate.js'
import { DEFAULT_POLICY, type Policy } from './rules.js'

/** Largest policy file read (a policy is a few kilobytes; anything near this is not one). */
export const MAX_POLICY_BYTES = 1024 * 1024

/** A problem of a policy file, with the 1-based line it is on when known. */
export interface PolicyFileIssue extends PolicyIssue {
  line?: number
}

/** A loaded, valid policy. */
export interface PolicyFile {
  /** The complete policy (the overrides on the base policy), ready for `evaluate`, `backtest` or `createRiskcheck`. */
  policy: Policy
  /** The overrides as written, without `$schema` and `description` (pass them as `createRiskcheck({ scoring })`). */
  overrides: PolicyOverrides
  /** Canonical JSON of the overrides: sorted keys, no whitespace (what the version id hashes). */
  canonical: string
  /** Stable version id of the overrides, `pol_` + 16 hex digits. */
  version: string
  /** The file's `description`, if any. */
  description: string | null
  /** Where the policy came from (a path), if known. */
  source: string | null
  /** Valid but worth a look (the default hard rule dropped, duplicate rule names). */
  warnings: PolicyFileIssue[]
}

/** A policy file that cannot be used: every problem, each with its path and line. */
export class PolicyFileError extends PolicyError {
  readonly source: string | null
  override readonly issues: readonly PolicyFileIssue[]
  constructor(issues: readonly PolicyFileIssue[], source: string | null) {
    super(issues, source ?? undefined)
    this.name = 'PolicyFileError'
    this.source = source
    this.issues = issues
  }
}

/** Options of {@link parsePolicy} and {@link loadPolicyFile}. */
export interface ParsePolicyOptions {
  /** `json` or `yaml`; by default from the file name (`.json`, `.yaml`, `.yml`), else guessed from the text. */
  format?: 'json' | 'yaml'
  /** A name for messages (the path). */
  source?: string
  /** The policy the overrides apply to (default: the default policy). */
  base?: Policy
}

const METADATA = new Set(['$schema', 'description'])

/**
 * Most keys of one mapping in a policy file (a mapping of every factor code has 61). The yaml package checks a new key
 * against each key before it (unique keys), so a mapping's cost grows with the square of its keys: a 64 KiB mapping
 * of 8,000 keys blocked the event loop for a second, a 1 MiB one for minutes.
 */
export const MAX_POLICY_KEYS = 256

const COLLECTIONS: ReadonlySet<unknown> = new Set(['block-map', 'block-seq', 'flow-collection'])

type CstNode = { type?: unknown; offset?: unknown; items?: unknown; start?: { source?: unknown } }

/**
 * A mapping or list of a YAML (or JSON) text nested deeper than {@link MAX_POLICY_DEPTH}, or a mapping of more than
 * {@link MAX_POLICY_KEYS} keys: its offset and the problem, or null. Measured on the syntax tree of the yaml package's
 * parser, which keeps its own stack, with a stack of our own: the composer that turns the tree into a document
 * recurses once per level, and a few kilobytes of `- - - …` or `[[[…` overflowed it — after which the next such parse
 * crashed the process (out of memory), not just the request.
 */
function tooLargeAt(tokens: Iterable<unknown>): { offset: number; message: string } | null {
  const stack: Array<{ node: unknown; depth: number }> = []
  for (const node of tokens) stack.push({ node, depth: 0 })
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const node = top.node as CstNode
    const offset = typeof node.offset === 'number' ? node.offset : 0
    const depth = COLLECTIONS.has(node.type) ? top.depth + 1 : top.depth
    if (depth > MAX_POLICY_DEPTH) return { offset, message: TOO_DEEP }
    const map = node.type === 'block-map' || (node.type === 'flow-collection' && node.start?.source === '{')
    if (map && Array.isArray(node.items) && node.items.length > MAX_POLICY_KEYS)
      return { offset, message: `has a mapping of more than ${MAX_POLICY_KEYS} keys; a policy's largest lists every factor code (${FACTOR_CODES.length})` }
    for (const v of Object.values(node)) if (v !== null && typeof v === 'object') stack.push({ node: v, depth })
  }
  return null
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys)
  if (v === null || typeof v !== 'object') return v
  const out: Record<string, unknown> = {}
  for (const k of Object.keys(v).sort()) {
    const x = (v as Record<string, unknown>)[k]
    if (x !== undefined) out[k] = sortKeys(x)
  }
  return out
}

/** Canonical JSON of policy overrides: keys sorted at every level, `$schema` and `description` left out. */
export function canonicalPolicyJson(overrides: PolicyOverrides): string {
  const scoring = Object.fromEntries(Object.entries(overrides).filter(([k]) => !METADATA.has(k)))
  return JSON.stringify(sortKeys(scoring))
}

/**
 * The version id of policy overrides: `pol_` + the first 16 hex digits of the SHA-256 of their canonical JSON.
 *
 * @example
 * policyVersion({ weights: { ip_vpn: 60 } }) === policyVersion({ $schema: 'x', weights: { ip_vpn: 60 } }) // true
 */
export function policyVersion(overrides: PolicyOverrides): string {
  return `pol_${createHash('sha256').update(canonicalPolicyJson(overrides)).digest('hex').slice(0, 16)}`
}

/**
 * A policy from an already parsed document (a JSON object, e.g. a stored policy). Throws a {@link PolicyFileError}
 * listing every problem.
 */
export function policyFromObject(doc: unknown, options: Omit<ParsePolicyOptions, 'format'> = {}): PolicyFile {
  const base = options.base ?? DEFAULT_POLICY
  const source = options.source ?? null
  const { errors, warnings } = validatePolicy(doc, base)
  if (errors.length > 0) throw new PolicyFileError(errors, source)
  const all = doc as PolicyOverrides
  const overrides = Object.fromEntries(Object.entries(all).filter(([k]) => !METADATA.has(k))) as PolicyOverrides
  const canonical = canonicalPolicyJson(overrides)
  return {
    policy: createPolicy(overrides, base),
    overrides,
    canonical,
    version: policyVersion(overrides),
    description: typeof all.description === 'string' ? all.description : null,
    source,
    warnings,
  }
}

function formatOf(source: string | undefined, text: string): 'json' | 'yaml' {
  if (source && /\.json$/i.test(source)) return 'json'
  if (source && /\.ya?ml$/i.test(source)) return 'yaml'
  return /^\s*[{[]/.test(text) ? 'json' : 'yaml'
}

/** Path segments of a dotted issue path (`rules[2].when` → ['rules', 2, 'when']). */
function segments(path: string): Array<string | number> {
  const out: Array<string | number> = []
  for (const m of path.matchAll(/\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]|([^.[\]]+)/g)) {
    if (m[1] !== undefined) out.push(Number(m[1]))
    else if (m[2] !== undefined) out.push(JSON.parse(m[2]) as string)
    else if (m[3] !== undefined) out.push(m[3])
  }
  return out
}

/**
 * Parses and validates a policy file's text (JSON or YAML). Throws a {@link PolicyFileError} listing every problem —
 * syntax errors, duplicate keys, schema errors, thresholds out of order … — each with its path and line.
 */
export async function parsePolicy(text: string, options: ParsePolicyOptions = {}): Promise<PolicyFile> {
  const source = options.source ?? null
  const fail = (issues: PolicyFileIssue[]): never => {
    throw new PolicyFileError(issues, source)
  }
  if (text.length > MAX_POLICY_BYTES) fail([{ path: '', message: `is larger than ${MAX_POLICY_BYTES} bytes; a policy file is a few kilobytes` }])
  const format = options.format ?? formatOf(options.source, text)
  const { LineCounter, Parser, parseDocument } = await import('yaml')
  const body = text.replace(/^\uFEFF/, '')
  const early = new LineCounter()
  const large = tooLargeAt(new Parser(early.addNewLine).parse(body))
  if (large !== null) fail([{ path: '', message: large.message, line: early.linePos(large.offset).line }])
  const lines = new LineCounter()
  // YAML (JSON is read by it too, for line numbers and duplicate keys): aliases are capped, so a small file cannot
  // expand into a huge document.
  const yamlDoc = parseDocument(body, { lineCounter: lines, uniqueKeys: true, prettyErrors: false })
  let doc: unknown
  if (format === 'json') {
    try {
      doc = JSON.parse(body)
    } catch (e) {
      const message = (e as Error).message
      const at = /position (\d+)/.exec(message)
      const line = at ? lines.linePos(Number(at[1])).line : undefined
      fail([{ path: '', message: `is not valid JSON: ${message}`, ...(line !== undefined ? { line } : {}) }])
    }
  }
  const yamlErrors = yamlDoc.errors.filter((e) => format === 'yaml' || e.code === 'DUPLICATE_KEY')
  if (yamlErrors.length > 0)
    fail(
      yamlErrors.map((e) => ({
        path: '',
        message: `${e.code === 'DUPLICATE_KEY' ? 'has a key twice' : `is not valid ${format === 'json' ? 'JSON' : 'YAML'}`}: ${e.message.split('\n')[0]}`,
        line: lines.linePos(e.pos[0]).line,
      })),
    )
  if (format === 'yaml') {
    try {
      doc = yamlDoc.toJS({ maxAliasCount: 100 })
    } catch (e) {
      fail([{ path: '', message: `is not valid YAML: ${(e as Error).message}` }])
    }
  }
  const lineOf = (path: string): number | undefined => {
    const node = path === '' ? yamlDoc.contents : (yamlDoc.getIn(segments(path), true) as { range?: [number, number, number] } | undefined)
    const start = (node as { range?: [number, number, number] } | null | undefined)?.range?.[0]
    return start === undefined ? undefined : lines.linePos(start).line
  }
  const withLines = (issues: readonly PolicyIssue[]): PolicyFileIssue[] =>
    issues
      .map((i): PolicyFileIssue => {
        const line = lineOf(i.path)
        return line === undefined ? { ...i } : { ...i, line }
      })
      .sort((a, b) => (a.line ?? 0) - (b.line ?? 0))
  try {
    const file = policyFromObject(doc, { ...options, ...(source ? { source } : {}) })
    return { ...file, warnings: withLines(file.warnings) }
  } catch (e) {
    if (e instanceof PolicyFileError) fail(withLines(e.issues))
    throw e
  }
}

/**
 * Reads and validates a policy file (`.json`, `.yaml` or `.yml`). Throws a {@link PolicyFileError} listing every
 * problem, or the file system's error when it cannot be read.
 *
 * @example
 * const { policy, version, warnings } = await loadPolicyFile('policy.yaml')
 */
export async function loadPolicyFile(file: string | URL, options: Omit<ParsePolicyOptions, 'source'> = {}): Promise<PolicyFile> {
  const path = file instanceof URL ? fileURLToPath(file) : file
  if ((await stat(path)).size > MAX_POLICY_BYTES)
    throw new PolicyFileError([{ path: '', message: `is larger than ${MAX_POLICY_BYTES} bytes; a policy file is a few kilobytes` }], path)
  const text = await readFile(path, 'utf8')
  return parsePolicy(text, { ...options, source: path })
}

/** One line per problem: `path (line N): message`. */
export function formatPolicyIssues(issues: readonly PolicyFileIssue[]): string[] {
  return issues.map((i) => `${i.path || '(file)'}${i.line !== undefined ? ` (line ${i.line})` : ''}: ${i.message}`)
}
