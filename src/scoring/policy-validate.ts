/**
 * Validation of policy overrides (a policy file's content, or what `createPolicy` is given): every problem, each with
 * its path (`weights.email_disposable`, `rules[2].when.any[0]`) and a plain-English message. The shape comes from the
 * one schema of ./policy-schema.ts; the rules a schema cannot express are checked here against the base policy:
 * thresholds in order after merging (also each context's), confidence bounds in order, every rule condition naming
 * at least one factor, rule references naming a base rule.
 *
 * Warnings point at files that are valid but probably not what was meant (docs/scoring.md lists them).
 */
import { Value } from '@sinclair/typebox/value'
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors'
import type { TSchema } from '@sinclair/typebox'
import { CONTEXTS } from '../schema.js'
import { messageOf, PolicyFileSchema, unknownKeyMessageOf } from './policy-schema.js'
import type { Policy, PolicyOverlay, PolicyRule, Thresholds } from './rules.js'

/** One problem of a policy: where (a dotted path; `""` for the whole document) and what. */
export interface PolicyIssue {
  path: string
  message: string
}

/** Every error (the policy cannot be used) and warning (it can, but check it) of a policy document. */
export interface PolicyValidation {
  errors: PolicyIssue[]
  warnings: PolicyIssue[]
}

/**
 * Most levels of mappings and lists a policy document may nest: a policy needs 7 (the root,
 * `contexts.checkout.rules[0].when.any`); deeper ones are refused before anything walks them recursively.
 */
export const MAX_POLICY_DEPTH = 32
/** The problem of a document nested deeper than {@link MAX_POLICY_DEPTH} (a file's text or an object alike). */
export const TOO_DEEP = `nests mappings or lists more than ${MAX_POLICY_DEPTH} levels deep; a policy needs 7`

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)

/** A value for a message: short JSON, cut at 40 characters. */
function shown(v: unknown): string {
  let s: string
  try {
    s = v === undefined ? 'nothing' : typeof v === 'number' && !Number.isFinite(v) ? String(v) : (JSON.stringify(v) ?? String(v))
  } catch {
    s = Array.isArray(v) ? 'a list' : typeof v === 'object' && v !== null ? 'a mapping' : String(v)
  }
  return s.length > 40 ? `${s.slice(0, 37)}…` : s
}

/** `rules[0].when.any[1]` from the JSON pointer `/rules/0/when/any/1`, knowing which segments index arrays. */
function dotted(pointer: string, root: unknown): string {
  if (pointer === '') return ''
  let out = ''
  let node: unknown = root
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~')
    if (Array.isArray(node)) out += `[${key}]`
    else out += /^[A-Za-z_$][\w$]*$/.test(key) ? (out === '' ? key : `.${key}`) : `[${JSON.stringify(key)}]`
    node = node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined
  }
  return out
}

/**
 * The path of a mapping or list nested deeper than {@link MAX_POLICY_DEPTH}, or null. Iterative, each object once
 * (a shared or cyclic one is not walked again).
 */
function tooDeep(doc: unknown): string | null {
  const seen = new WeakSet<object>()
  const stack: Array<{ v: unknown; depth: number; path: string }> = [{ v: doc, depth: 0, path: '' }]
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const { v, path } = top
    if (v === null || typeof v !== 'object' || seen.has(v)) continue
    seen.add(v)
    const depth = top.depth + 1
    if (depth > MAX_POLICY_DEPTH) return path
    const array = Array.isArray(v)
    for (const [k, child] of Object.entries(v)) {
      const at = array ? `${path}[${k}]` : /^[A-Za-z_$][\w$]*$/.test(k) ? (path === '' ? k : `${path}.${k}`) : `${path}[${JSON.stringify(k)}]`
      stack.push({ v: child, depth, path: at })
    }
  }
  return null
}

const jsonType = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'number' ? 'number' : typeof v)

/** Structural errors of `value` against `schema`, with paths relative to `root` (the value sits at `prefix`). */
function structuralErrors(schema: TSchema, value: unknown, root: unknown, prefix: string, out: PolicyIssue[], seen: Set<string>): void {
  for (const e of Value.Errors(schema, value) as Iterable<ValueError>) {
    const pointer = prefix + e.path
    const path = dotted(pointer, root)
    if (seen.has(path)) continue // one message per place (a number out of range is also "not an integer" …)
    if (e.type === ValueErrorType.Union) {
      // A union of shapes (a rule reference or a rule): explain against the member the value's type selects.
      const members = ((e.schema as { anyOf?: TSchema[] }).anyOf ?? []).filter(
        (m) => (m as { type?: string }).type === jsonType(e.value) && (m as { const?: unknown }).const === undefined,
      )
      if (members.length === 1) {
        structuralErrors(members[0] as TSchema, e.value, root, pointer, out, seen)
        continue
      }
    }
    seen.add(path)
    if (e.type === ValueErrorType.ObjectAdditionalProperties) {
      const known = Object.keys((e.schema as { properties?: object }).properties ?? {})
      out.push({ path, message: unknownKeyMessageOf(e.schema) ?? `is not a field here (expected ${known.join(', ')})` })
    } else if (e.type === ValueErrorType.ObjectRequiredProperty) {
      out.push({ path, message: `is required${messageOf(e.schema) ? ` (it ${messageOf(e.schema)})` : ''}` })
    } else {
      out.push({ path, message: `${messageOf(e.schema) ?? e.message.replace(/^Expected/, 'must be')} (got ${shown(e.value)})` })
    }
  }
}

function checkOrder(path: string, t: Thresholds, out: PolicyIssue[], note = ''): void {
  const ok = [t.medium, t.high, t.critical].every((v) => typeof v === 'number' && Number.isFinite(v))
  if (ok && !(t.medium <= t.high && t.high <= t.critical))
    out.push({ path, message: `must satisfy medium <= high <= critical (got medium ${t.medium}, high ${t.high}, critical ${t.critical}${note})` })
}

/**
 * Factors the document takes off `invalid` that a block rule in force still names: an answer with one of them alone
 * is then `valid` (or risky) and blocked all the same, which an author lowering the effect rarely means.
 */
function stillBlocked(doc: Record<string, unknown>, base: Policy, out: PolicyIssue[]): void {
  const effects = doc.effects as Record<string, unknown>
  const rules: unknown[] = Array.isArray(doc.rules) ? doc.rules.map((r) => (typeof r === 'string' ? base.rules.find((b) => b.name === r) : r)) : [...base.rules]
  // a context's rules apply before these, in that context
  const contexts = isObject(doc.contexts) ? doc.contexts : {}
  for (const name of CONTEXTS) {
    const overlay = isObject(contexts[name]) ? contexts[name] : base.contexts?.[name]
    if (isObject(overlay) && Array.isArray(overlay.rules)) rules.push(...(overlay.rules as unknown[]))
  }
  for (const [factor, effect] of Object.entries(effects)) {
    if (effect === 'invalid' || base.effects[factor as keyof Policy['effects']] !== 'invalid') continue
    const blocking = rules.filter((r): r is PolicyRule => isObject(r) && r.action === 'block' && isObject(r.when) && Array.isArray(r.when.any) && r.when.any.includes(factor))
    if (blocking.length > 0)
      out.push({
        path: `effects.${factor}`,
        message: `is ${String(effect)}, but the rule ${blocking.map((r) => r.name).join(', ')} still blocks on it: such answers are ${effect === 'info' ? 'valid' : String(effect)} and blocked (keep it invalid, or give rules that do not name it)`,
      })
  }
}

function checkRuleConditions(path: string, rules: unknown, out: PolicyIssue[]): void {
  if (!Array.isArray(rules)) return
  rules.forEach((r, i) => {
    if (!isObject(r) || !isObject(r.when)) return
    const all = Array.isArray(r.when.all) ? r.when.all : []
    const any = Array.isArray(r.when.any) ? r.when.any : []
    if (all.length === 0 && any.length === 0) out.push({ path: `${path}[${i}].when`, message: 'must list at least one factor in `all` or `any`' })
  })
}

/**
 * Checks policy overrides against the policy schema and the base policy. Never throws; an empty `errors` means
 * `createPolicy(doc, base)` accepts the document.
 *
 * @example
 * validatePolicy({ weights: { ip_vpn: 101 } }).errors
 * // [{ path: 'weights.ip_vpn', message: 'must be a number from 0 to 100 (got 101)' }]
 */
export function validatePolicy(doc: unknown, base: Policy): PolicyValidation {
  const errors: PolicyIssue[] = []
  const warnings: PolicyIssue[] = []
  if (!isObject(doc)) {
    errors.push({ path: '', message: `must be a mapping of policy fields (weights, thresholds, actions, rules, contexts …) (got ${shown(doc)})` })
    return { errors, warnings }
  }
  const deep = tooDeep(doc)
  if (deep !== null) {
    errors.push({ path: deep, message: TOO_DEEP })
    return { errors, warnings }
  }
  structuralErrors(PolicyFileSchema, doc, doc, '', errors, new Set())
  const bad = new Set(errors.map((e) => e.path))
  const fine = (path: string) => ![...bad].some((b) => b === path || b.startsWith(`${path}.`) || b.startsWith(`${path}[`))

  // Thresholds, merged on the base, and each context's on top of them (as they apply at evaluation time).
  if (fine('thresholds')) {
    const thresholds = { ...base.thresholds, ...(isObject(doc.thresholds) ? doc.thresholds : {}) } as Thresholds
    checkOrder('thresholds', thresholds, errors)
    const contexts = { ...base.contexts, ...(isObject(doc.contexts) ? doc.contexts : {}) } as Record<string, PolicyOverlay | undefined>
    for (const name of CONTEXTS) {
      const path = `contexts.${name}.thresholds`
      if (!fine(path) || !contexts[name]?.thresholds) continue
      const fromBase = !(isObject(doc.contexts) && isObject(doc.contexts[name]))
      checkOrder(path, { ...thresholds, ...contexts[name]!.thresholds }, errors, fromBase ? ', the base policy’s overlay on these thresholds' : '')
    }
  }
  if (fine('confidence') && isObject(doc.confidence)) {
    const c = { ...base.confidence, ...doc.confidence }
    if (!(c.medium <= c.low)) errors.push({ path: 'confidence', message: `must satisfy medium <= low (got medium ${c.medium}, low ${c.low})` })
  }

  // Rules: conditions name a factor; references name a base rule; the default hard rule is rarely meant to go.
  if (Array.isArray(doc.rules)) {
    checkRuleConditions('rules', doc.rules, errors)
    const baseNames = base.rules.map((r) => r.name)
    const names: string[] = []
    doc.rules.forEach((r, i) => {
      if (typeof r === 'string') {
        if (r !== '' && !baseNames.includes(r))
          errors.push({ path: `rules[${i}]`, message: `names no rule of the base policy (got ${shown(r)}; base rules: ${baseNames.join(', ') || 'none'})` })
        names.push(r)
      } else if (isObject(r) && typeof r.name === 'string') names.push(r.name)
    })
    const dropped = baseNames.filter((n) => !names.includes(n))
    if (dropped.length > 0)
      warnings.push({
        path: 'rules',
        message: `replaces the base rules without ${dropped.join(', ')}; list ${dropped.length === 1 ? 'its name' : 'their names'} in rules to keep ${dropped.length === 1 ? 'it' : 'them'} (e.g. unusable inputs are then no longer always blocked)`,
      })
    const dupes = names.filter((n, i) => names.indexOf(n) !== i)
    if (dupes.length > 0) warnings.push({ path: 'rules', message: `has several rules named ${[...new Set(dupes)].join(', ')} (backtest reports name rules)` })
  }
  if (isObject(doc.contexts))
    for (const name of CONTEXTS) {
      const overlay = doc.contexts[name]
      if (isObject(overlay)) checkRuleConditions(`contexts.${name}.rules`, overlay.rules, errors)
    }
  if (fine('effects') && fine('rules') && fine('contexts') && isObject(doc.effects)) stillBlocked(doc, base, warnings)
  errors.sort(byPath)
  return { errors, warnings }
}

/** Document-like order of paths: `rules[2]` before `rules[10]`, a field before its children. */
function byPath(a: PolicyIssue, b: PolicyIssue): number {
  const key = (p: string) => p.replace(/\[(\d+)\]/g, (_, n: string) => `[${n.padStart(6, '0')}]`)
  const ka = key(a.path)
  const kb = key(b.path)
  return ka < kb ? -1 : ka > kb ? 1 : 0
}

/** Resolves the rule list of overrides (strings name rules of `base`) into rules; call after validation. */
export function resolveRules(rules: ReadonlyArray<PolicyRule | string>, base: Policy): PolicyRule[] {
  return rules.map((r) => (typeof r === 'string' ? (base.rules.find((b) => b.name === r) as PolicyRule) : r))
}
