/**
 * Matching an answer against the lists: which values of a lookup's details are compared with which item types, and
 * the factors and verdict sentence the matches give. Works on the details (not the raw input), so an answer served
 * from the cache is matched against the lists in force now.
 *
 * | lookup | compared |
 * |---|---|
 * | email | the address (`email`), its domain and parent domains (`email_domain`) |
 * | ip | the address, in every listed network holding it (`ip`); its country (`country`); its AS (`asn`) |
 * | phone, phone type | the E.164 number (`phone`); its country (`country`) |
 * | domain age, email authentication | the domain and parent domains (`email_domain`) |
 */
import { asciiDomain, canonicalEmailOf } from '../checks/email/canonical.js'
import type { FactorCode } from '../scoring/factors.js'
import { parseIp, type ParsedIp } from '../sources/ip/parse.js'
import { labelsOf, type Entries, type ListEntry, type ListIndex } from './compile.js'
import type { KeyFilter } from './key-filter.js'
import type { ListItemType, ListMatch } from './types.js'

/** The matches of one answer, with what the verdict needs. */
export interface ListOutcome {
  matches: ListMatch[]
  factors: FactorCode[]
  reasons: Partial<Record<FactorCode, string>>
}

const WHAT: Record<ListItemType, string> = {
  email: 'email address',
  email_domain: 'email domain',
  ip: 'IP address',
  phone: 'phone number',
  country: 'country',
  asn: 'network (AS number)',
}

/** Collects matches, one per list (the first found: the most specific), skipping expired items. */
class Collector {
  found: ListEntry[] | null = null
  constructor(readonly nowMs: number) {}

  /** Adds the live entries of lists not matched yet. */
  add(entries: Entries | undefined): void {
    if (!entries) return
    if (!Array.isArray(entries)) {
      this.one(entries)
      return
    }
    for (let i = 0; i < entries.length; i++) this.one(entries[i] as ListEntry)
  }

  private one(e: ListEntry): void {
    if (e.expiresAt !== null && e.expiresAt <= this.nowMs) return
    const found = (this.found ??= [])
    for (let k = 0; k < found.length; k++) if ((found[k] as ListEntry).list === e.list) return
    found.push(e)
  }
}

// The collector of the IP walk under way: matching is synchronous, so one visitor made once serves every call (a
// visitor per collector costs a closure per answer)
let visiting: Collector | null = null
/** {@link Collector.add} for the prefix index's walk (which goes on to the enclosing networks). */
function visit(entries: Entries): boolean {
  visiting?.add(entries)
  return false
}

/** The entries under `key` in `map`, asking its filter first. */
function probe<K extends string | number>(map: ReadonlyMap<K, Entries>, filter: KeyFilter, key: K): Entries | undefined {
  return filter.has(key) ? map.get(key) : undefined
}

/**
 * The domain and each parent domain (`a.b.example.com`, `b.example.com`, `example.com`, `com`) with as many labels as
 * some listed domain has.
 */
function matchDomain(index: ListIndex, c: Collector, domain: unknown): void {
  if (index.emailDomain.size === 0 || typeof domain !== 'string') return
  const ascii = asciiDomain(domain)
  if (ascii === null) return
  const labels = index.domainLabels
  let at = 0
  for (let n = labelsOf(ascii); n > 0; n--) {
    if (labels[n] === 1) c.add(probe(index.emailDomain, index.filters.emailDomain, at === 0 ? ascii : ascii.slice(at)))
    at = ascii.indexOf('.', at) + 1
  }
}

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null)

/** The IP lookup's prepared input when it is the address of `details` (saves parsing it again), else a parse. */
function addressOf(details: Record<string, any>, input: unknown): ParsedIp | null {
  const p = input as ParsedIp | null | undefined
  if (p && typeof p === 'object' && (p.version === 4 || p.version === 6) && p.address === details.ip) return p
  return parseIp(details.ip)
}

/** The values of an answer's details compared with the lists (see the module comment). */
function collect(index: ListIndex, type: string, details: Record<string, any>, c: Collector, input: unknown): void {
  switch (type) {
    case 'email': {
      if (details.syntax_valid !== true) return
      const domain = str(details.domain)
      if (domain === null) return
      if (index.email.size > 0) {
        const ascii = asciiDomain(domain)
        if (ascii !== null) c.add(probe(index.email, index.filters.email, canonicalEmailOf(String(details.local_part), ascii)))
      }
      matchDomain(index, c, domain)
      return
    }
    case 'ip': {
      const ip = index.ip.size > 0 ? addressOf(details, input) : null
      if (ip) {
        visiting = c
        try {
          index.ip.find(ip, visit)
        } finally {
          visiting = null
        }
      }
      const country = str(details.location?.country_code)
      if (country !== null && index.country.size > 0) c.add(index.country.get(country.toUpperCase()))
      const asn = details.network?.asn
      if (typeof asn === 'number' && index.asn.size > 0) c.add(probe(index.asn, index.filters.asn, asn))
      return
    }
    case 'phone':
    case 'phone_type': {
      const e164 = str(details.e164)
      if (e164 !== null && index.phone.size > 0) c.add(probe(index.phone, index.filters.phone, e164))
      const country = str(type === 'phone' ? details.country?.code : details.country)
      if (country !== null && index.country.size > 0) c.add(index.country.get(country.toUpperCase()))
      return
    }
    case 'domain_age':
    case 'email_auth':
      matchDomain(index, c, details.domain)
      return
  }
}

// the sentences made so far, by entry (an entry, its list's name and its reason never change once compiled)
const blockSentences = new WeakMap<ListEntry, string>()

/** The sentence of a block match: `The email domain is on the block list "Fraud rings" (chargebacks).` */
function blockSentence(e: ListEntry): string {
  let s = blockSentences.get(e)
  if (s === undefined) {
    s = `The ${WHAT[e.list.itemType]} is on the block list "${e.list.name}"${e.reason ? ` (${e.reason})` : ''}.`
    blockSentences.set(e, s)
  }
  return s
}

/** The answer of no match at all; read only (callers give `details.lists` an array of its own). */
export const NO_MATCH: Readonly<ListOutcome> = Object.freeze({ matches: Object.freeze([]) as unknown as ListMatch[], factors: Object.freeze([]) as unknown as FactorCode[], reasons: Object.freeze({}) })

/**
 * The list matches of one answer (lookup `type`, its details) at `nowMs`, in list order, with the factors
 * `list_blocked` / `list_allowed` and the sentence of the first block match. `input` may be the check's prepared
 * input (used only when it is the parsed address of an IP answer). No match at all answers the shared {@link NO_MATCH}.
 */
export function matchLists(index: ListIndex, type: string, details: unknown, nowMs: number, input?: unknown): ListOutcome {
  const c = new Collector(nowMs)
  if (details !== null && typeof details === 'object') collect(index, type, details as Record<string, any>, c, input)
  const found = c.found
  if (found === null) return NO_MATCH
  if (found.length > 1) found.sort((a, b) => a.list.position - b.list.position)
  const factors: FactorCode[] = []
  const reasons: Partial<Record<FactorCode, string>> = {}
  let block: ListEntry | undefined
  let allow: ListEntry | undefined
  for (let i = 0; i < found.length; i++) {
    const e = found[i] as ListEntry
    if (e.list.kind === 'block') block ??= e
    else allow ??= e
  }
  if (block) {
    factors.push('list_blocked')
    reasons.list_blocked = blockSentence(block)
  }
  if (allow) {
    factors.push('list_allowed')
    reasons.list_allowed = `The ${WHAT[allow.list.itemType]} is on the allow list "${allow.list.name}".`
  }
  const matches = found.map((e) => ({ list_id: e.list.id, name: e.list.name, kind: e.list.kind, item_type: e.list.itemType, value: e.value }))
  return { matches, factors, reasons }
}
