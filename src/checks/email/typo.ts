/**
 * `did_you_mean`: a corrected address for likely typos of popular mailbox domains and of common TLDs. The rules
 * (never-corrected domains, punctuation slips, bounded edit distance per first label, TLD typos) and their cost are
 * in docs/decisions.md, "Email checks" → "typo suggestions".
 */
import { isFreeProviderDomain, readEmailDataList } from './lists.js'

/** Longest domain considered (octets); longer input gets no suggestion. */
const MAX_DOMAIN = 253
const MAX_LABEL = 63

/**
 * TLD typos that are NOT delegated TLDs: fixed for any domain. Keys are the typed last label(s).
 * (A unit test checks against the Public Suffix List that none of these keys is a real TLD.)
 */
export const TLD_TYPOS: Readonly<Record<string, string>> = {
  c: 'com', con: 'com', cmo: 'com', ocm: 'com', comm: 'com', coom: 'com', ccom: 'com', cpm: 'com',
  vom: 'com', xom: 'com', c0m: 'com', cim: 'com', clm: 'com', copm: 'com', comn: 'com', cpom: 'com',
  cxom: 'com', colm: 'com', coim: 'com', cmm: 'com', 'co.m': 'com',
  nte: 'net', ner: 'net', nett: 'net', nrt: 'net', nwt: 'net', ney: 'net', nt: 'net',
  ogr: 'org', orgg: 'org', rog: 'org', prg: 'org', otg: 'org', or: 'org', og: 'org',
  'co.ukk': 'co.uk', 'co.ik': 'co.uk', 'co.ul': 'co.uk', 'co.yk': 'co.uk',
}

/** TLD slips that ARE real TLDs: only applied to a known target whose first label matches exactly. */
export const TLD_NEAR_MISSES: Readonly<Record<string, string>> = {
  co: 'com', cm: 'com', om: 'com', cam: 'com', ne: 'net',
}

// Maps (not the records) for lookups: a typed label such as `constructor` must not hit Object.prototype.
const TLD_TYPO_MAP: ReadonlyMap<string, string> = new Map(Object.entries(TLD_TYPOS))
const TLD_NEAR_MISS_MAP: ReadonlyMap<string, string> = new Map(Object.entries(TLD_NEAR_MISSES))

interface Target {
  domain: string
  label: string
  suffix: string
  /** max edits allowed on the first label (0 for short labels and `!` entries) */
  maxLabelEdits: number
  /** the characters of `label` as a bit set ({@link charMask}) */
  mask: number
}

interface TypoData {
  targets: Target[]
  /** suffix → targets by first-label length (index = length) */
  bySuffix: Map<string, Target[][]>
  known: Set<string>
  squashed: Map<string, string>
  /** domains on the free-provider list that are typo-squats of a target (still corrected) */
  squats: Set<string>
  /** lengths of the `squashed` keys (a domain whose dot-less length is none of them needs no squashing) */
  squashedLengths: Set<number>
}

let data: TypoData | undefined
/** Work done so far, counted (for tests that prove the cost per suggestion is bounded, without timing it). */
const work = { suggestions: 0, comparisons: 0, cells: 0 }

/**
 * Counters of the work done by {@link suggestDomain} in this process: suggestions computed, label comparisons
 * (distance computations), and distance-table cells filled. Each suggestion compares at most every typo target once, and each
 * comparison fills at most 64 × 64 cells, so the cost of one suggestion is bounded whatever the input.
 */
export function typoWork(): Readonly<typeof work> {
  return { ...work }
}

function load(): TypoData {
  if (data) return data
  const targets: Target[] = []
  const known = new Set<string>()
  const squashed = new Map<string, string>()
  const squats = new Set<string>()
  for (const line of readEmailDataList('typo-targets.txt')) {
    if (line.startsWith('-')) {
      squats.add(line.slice(1))
      continue
    }
    const fixedOnly = line.startsWith('!')
    const domain = fixedOnly ? line.slice(1) : line
    const dot = domain.indexOf('.')
    if (dot <= 0) continue
    const label = domain.slice(0, dot)
    const maxLabelEdits = fixedOnly ? 0 : label.length >= 6 ? 2 : label.length === 5 ? 1 : 0
    targets.push({ domain, label, suffix: domain.slice(dot + 1), maxLabelEdits, mask: charMask(label) })
    known.add(domain)
    const key = domain.replaceAll('.', '')
    if (!squashed.has(key)) squashed.set(key, domain)
  }
  const bySuffix = new Map<string, Target[][]>()
  for (const t of targets) {
    let byLength = bySuffix.get(t.suffix)
    if (!byLength) bySuffix.set(t.suffix, (byLength = []))
    ;(byLength[t.label.length] ??= []).push(t)
  }
  data = { targets, known, squashed, squats, bySuffix, squashedLengths: new Set([...squashed.keys()].map((k) => k.length)) }
  return data
}

/** Number of typo targets loaded (for the size-pinning test). */
export function getTypoTargetCount(): number {
  return load().targets.length
}

/**
 * The whole corrected address (`localPart@fixed-domain`) for a likely typo of a popular mailbox domain or
 * a common TLD, or null when there is no confident suggestion. Never returns the input itself. Case of
 * the domain is ignored; the local part is kept as given. It does not look anything up (a suggested
 * domain is known to exist only through the target list).
 *
 * @example
 * suggestEmail('jo', 'gmial.com')   // 'jo@gmail.com'
 * suggestEmail('jo', 'hotmail.con') // 'jo@hotmail.com'
 * suggestEmail('jo', 'gmx.com')     // null (a real provider, not a typo of gmail.com)
 * suggestEmail('jo', 'acme.con')    // 'jo@acme.com'
 */
export function suggestEmail(localPart: string, domain: string): string | null {
  if (typeof localPart !== 'string' || typeof domain !== 'string' || localPart === '') return null
  const fixed = suggestDomain(domain)
  return fixed === null ? null : `${localPart}@${fixed}`
}

/**
 * The corrected domain for {@link suggestEmail} (null when none).
 *
 * @example suggestDomain('yaho.com') // 'yahoo.com'
 */
export function suggestDomain(domain: string): string | null {
  if (typeof domain !== 'string' || domain.length === 0 || domain.length > MAX_DOMAIN + 1) return null
  return computeSuggestion(domain)
}

/** True for a domain that needs no clean-up: lower-case letters, digits, '-' and '.', no trailing dot. */
function isCanonicalLdh(d: string): boolean {
  for (let i = 0; i < d.length; i++) {
    const c = d.charCodeAt(i)
    if (!((c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2e)) return false
  }
  return d.length > 0 && d.charCodeAt(d.length - 1) !== 0x2e
}

function computeSuggestion(input: string): string | null {
  work.suggestions++
  let original = input
  let d = input
  let dots = 0
  if (isCanonicalLdh(input)) {
    for (let i = 0; i < d.length; i++) if (d.charCodeAt(i) === 0x2e) dots++
  } else {
    original = input.trim().toLowerCase()
    d = original
    // a trailing dot is dropped (and so suggested away: `gmail.com.` → `gmail.com`)
    while (d.endsWith('.')) d = d.slice(0, -1)
    if (d === '' || d.length > MAX_DOMAIN) return null
    for (let i = 0; i < d.length; i++) {
      const c = d.charCodeAt(i)
      // only plain LDH names (plus the comma, a common slip for the dot) are considered
      if (!((c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2e || c === 0x2c)) return null
      if (c === 0x2e || c === 0x2c) dots++
    }
    d = d.replaceAll(',', '.')
  }
  if (d.length > MAX_DOMAIN) return null
  const { known, squashed, squats, bySuffix, squashedLengths } = load()
  if (known.has(d)) return d === original ? null : d
  // A real mailbox domain (free-provider list) is not a typo, unless it is a listed typo-squat.
  if (!squats.has(d) && isFreeProviderDomain(d)) return d === original ? null : d

  if (squashedLengths.has(d.length - dots)) {
    const viaDots = squashed.get(d.replaceAll('.', ''))
    if (viaDots !== undefined) return viaDots
  }

  const dot = d.indexOf('.')
  if (dot <= 0 || dot === d.length - 1) return null
  const label = d.slice(0, dot)
  const suffix = d.slice(dot + 1)
  if (label.length > MAX_LABEL) return null

  // Candidates: targets with the same suffix (label budget by target), with a suffix this one is a known typo of
  // (one edit spent on the suffix), or a real TLD that is a common slip (label must match exactly). The three groups
  // are disjoint (typo keys are not real TLDs; near misses are). A target's label length must be within its budget
  // (≤ 2) of this label's, so only the index entries of lengths L−2 … L+2 are read.
  const best: Best = { domain: null, cost: Number.POSITIVE_INFINITY, tie: false, mask: charMask(label) }
  const typoSuffix = TLD_TYPO_MAP.get(suffix)
  const nearSuffix = TLD_NEAR_MISS_MAP.get(suffix)
  const from = Math.max(0, label.length - 2)
  const to = label.length + 2
  const same = bySuffix.get(suffix)
  const typo = typoSuffix === undefined ? undefined : bySuffix.get(typoSuffix)
  const near = nearSuffix === undefined ? undefined : bySuffix.get(nearSuffix)
  for (let len = from; len <= to; len++) {
    for (const t of same?.[len] ?? NONE) consider(best, label, t, 0, t.maxLabelEdits)
    for (const t of typo?.[len] ?? NONE) consider(best, label, t, 1, Math.min(t.maxLabelEdits, 1))
    if (len >= 5) for (const t of near?.[len] ?? NONE) consider(best, label, t, 1, 0)
  }
  if (best.domain !== null) return best.tie ? null : best.domain

  // generic fix of a non-existent TLD typo, for any domain
  const lastDot = d.lastIndexOf('.')
  const tld = d.slice(lastDot + 1)
  const fixedTld = TLD_TYPO_MAP.get(tld)
  if (fixedTld !== undefined && lastDot > 0) {
    const candidate = `${d.slice(0, lastDot)}.${fixedTld}`
    return candidate === original ? null : candidate
  }
  return d === original ? null : d
}

const NONE: readonly Target[] = []

/** The best (cheapest) correction so far; `tie` when two different targets share that cost. */
interface Best {
  domain: string | null
  cost: number
  tie: boolean
  /** the characters of the typed label ({@link charMask}) */
  mask: number
}

/**
 * The set of characters of an LDH label as 32 bits: a–z → bits 0–25, digits folded onto bits 26–30, '-' → bit 31.
 * Each edit removes or brings in at most one character, so the distinct characters one label has and the other lacks
 * are a lower bound of their edit distance — a cheap test that rules out most targets before the distance is computed
 * (folding digits onto shared bits only weakens the bound, never breaks it).
 */
export function charMask(label: string): number {
  let m = 0
  for (let i = 0; i < label.length; i++) {
    const c = label.charCodeAt(i)
    if (c >= 0x61 && c <= 0x7a) m |= 1 << (c - 0x61)
    else if (c >= 0x30 && c <= 0x39) m |= 1 << (26 + ((c - 0x30) % 5))
    else m |= 1 << 31
  }
  return m
}

function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333)
  return (Math.imul((x + (x >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24) & 0xff
}

/**
 * A lower bound of the edit distance of two labels from their {@link charMask}s: the larger number of characters
 * one has and the other lacks.
 *
 * @example editDistanceBound(charMask('gmail'), charMask('gmial')) // 0
 */
export function editDistanceBound(a: number, b: number): number {
  return Math.max(popcount(a & ~b), popcount(b & ~a))
}

/** Scores one target against the typed first label and keeps it in `best` when it is a confident correction. */
function consider(best: Best, label: string, t: Target, suffixCost: number, labelBudget: number): void {
  if (Math.abs(label.length - t.label.length) > labelBudget) return
  if (editDistanceBound(best.mask, t.mask) > labelBudget) return
  if (label !== t.label && labelBudget > 0) work.comparisons++
  const labelCost = label === t.label ? 0 : labelBudget === 0 ? 1 : osaDistance(label, t.label, labelBudget)
  if (labelCost > labelBudget) return
  const cost = suffixCost + labelCost
  if (cost === 0 || cost > 2) return
  if (cost < best.cost) {
    best.cost = cost
    best.domain = t.domain
    best.tie = false
  } else if (cost === best.cost && best.domain !== t.domain) {
    best.tie = true
  }
}

// Reused rows for the distance computation (labels are ≤ 63 characters).
const ROW_A = new Int32Array(MAX_LABEL + 2)
const ROW_B = new Int32Array(MAX_LABEL + 2)
const ROW_C = new Int32Array(MAX_LABEL + 2)

/**
 * Optimal-string-alignment distance (Levenshtein plus adjacent transpositions) between two strings of at
 * most 63 characters, with early exit: returns `max + 1` as soon as the distance must exceed `max`.
 *
 * @example osaDistance('gmial', 'gmail', 2) // 1
 */
export function osaDistance(a: string, b: string, max: number): number {
  const n = a.length
  const m = b.length
  if (Math.abs(n - m) > max) return max + 1
  if (n > MAX_LABEL + 1 || m > MAX_LABEL + 1) return max + 1
  let prev2 = ROW_A
  let prev = ROW_B
  let cur = ROW_C
  for (let j = 0; j <= m; j++) prev[j] = j
  for (let i = 1; i <= n; i++) {
    work.cells += m
    cur[0] = i
    let rowMin = i
    const ai = a.charCodeAt(i - 1)
    for (let j = 1; j <= m; j++) {
      const bj = b.charCodeAt(j - 1)
      let v = Math.min((prev[j] ?? 0) + 1, (cur[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + (ai === bj ? 0 : 1))
      if (i > 1 && j > 1 && ai === b.charCodeAt(j - 2) && a.charCodeAt(i - 2) === bj) {
        v = Math.min(v, (prev2[j - 2] ?? 0) + 1)
      }
      cur[j] = v
      if (v < rowMin) rowMin = v
    }
    if (rowMin > max) return max + 1
    const t = prev2
    prev2 = prev
    prev = cur
    cur = t
  }
  const d = prev[m] ?? max + 1
  return d > max ? max + 1 : d
}
