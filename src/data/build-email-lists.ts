/**
 * Compiles the email lists of a data set from a fresh disposable-domain list (`riskcheck data update --only
 * disposable`): the disposable list cleaned of entries that must never match, and the free-provider list without the
 * domains that the disposable list now names (a domain is never both free and disposable).
 */
import { domainToASCII } from 'node:url'
import { parse as parseDomain } from 'tldts'

/** Domains never reported disposable even when the upstream list has them (curated). */
export const DISPOSABLE_ALLOW: readonly string[] = []

/** A compiled disposable list (`email/disposable.json` of a set). */
export interface CompiledDisposable {
  exact: string[]
  wildcard: string[]
  /** upstream entries left out: ICANN public suffixes (the parent-domain walk would flag every domain below them) and DISPOSABLE_ALLOW */
  allow: string[]
  /** upstream entries that are not domain names at all */
  dropped: number
}

/**
 * True for an upstream entry that must not be on the disposable list: an ICANN public suffix (`edu.pl`, `my.id`) —
 * the parent-domain walk would flag every domain below it — or a curated exception.
 */
export function isAllowedDisposableEntry(domain: string): boolean {
  const d = domain.toLowerCase()
  if (DISPOSABLE_ALLOW.includes(d)) return true
  const p = parseDomain(d)
  return p.publicSuffix === d || p.domain === null
}

/** A plausible domain name (labels of letters, digits and hyphens, at least two labels), or null. */
function asciiDomainOf(entry: string): string | null {
  const raw = entry.trim().toLowerCase().replace(/\.$/, '')
  if (raw === '' || raw.length > 253) return null
  const ascii = /^[\x20-\x7e]*$/.test(raw) ? raw : domainToASCII(raw)
  if (ascii === '' || ascii.length > 253) return null
  const labels = ascii.split('.')
  if (labels.length < 2) return null
  for (const l of labels) if (!/^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/.test(l)) return null
  return ascii
}

/**
 * Compiles upstream entries (`index.json` and `wildcard.json` of disposable-email-domains, or any list of domain
 * strings) into the lookup form: lower-case ASCII, de-duplicated, sorted, allowed entries left out.
 *
 * @example compileDisposable(['Mailinator.com', 'edu.pl'], []) // { exact: ['mailinator.com'], allow: ['edu.pl'], … }
 */
export function compileDisposable(exact: readonly unknown[], wildcard: readonly unknown[]): CompiledDisposable {
  const allow = new Set<string>()
  let dropped = 0
  const compile = (list: readonly unknown[]): string[] => {
    const out = new Set<string>()
    for (const entry of list) {
      const d = typeof entry === 'string' ? asciiDomainOf(entry) : null
      if (d === null) {
        dropped++
        continue
      }
      if (isAllowedDisposableEntry(d)) allow.add(d)
      else out.add(d)
    }
    return [...out].sort()
  }
  const e = compile(exact)
  const w = compile(wildcard)
  return { exact: e, wildcard: w, allow: [...allow].sort(), dropped }
}

/** True when `domain` or one of its parents (two labels or more) is on the compiled list. */
function isListed(list: { exact: Set<string>; wildcard: Set<string> }, domain: string): boolean {
  let c = domain
  for (;;) {
    if (list.exact.has(c) || list.wildcard.has(c)) return true
    const dot = c.indexOf('.')
    if (dot < 0) return false
    c = c.slice(dot + 1)
    if (!c.includes('.')) return false
  }
}

/** The free-provider domains without those the disposable list names. Returns the kept and the removed domains. */
export function subtractDisposable(free: readonly string[], disposable: CompiledDisposable): { kept: string[]; removed: string[] } {
  const list = { exact: new Set(disposable.exact), wildcard: new Set(disposable.wildcard) }
  const kept: string[] = []
  const removed: string[] = []
  for (const d of free) (isListed(list, d) ? removed : kept).push(d)
  return { kept, removed }
}
