/**
 * Compiles Google libphonenumber's prefix resources into the compact tables the phone source reads
 * (data/phone/*.txt.gz + data/phone/manifest.json):
 *
 * - carrier.txt.gz    ← resources/carrier/en/<cc>.txt    (original-assignment mobile carrier names)
 * - geocoding.txt.gz  ← resources/geocoding/en/<cc>.txt  (region descriptions, e.g. "Jersey City, NJ")
 * - timezones.txt.gz  ← resources/timezones/map_data.txt (IANA zones per prefix) + a zone → country table built
 *                       from the tz database's zone.tab (and tzdata.zi links for the old names Google uses)
 *
 * Each table is rewritten into the smallest set of prefix entries that gives exactly the same longest-prefix answer
 * for every number (the ORTC algorithm of Draves et al., "Constructing optimal IP routing tables", generalised
 * from binary tries to 10-ary digit tries; an entry may say "no data" to cut a hole in a parent's range). The build
 * verifies the answer of every source prefix against the compiled table before writing.
 *
 * Text format (before gzip), one section per country calling code:
 *   `@<cc> <entries>`            starts a section
 *   `v<TAB>value<TAB>value…`     the section's distinct values (index 0, 1, …)
 *   `c <idx>`                    (optional) the source's own value for the bare calling code, kept exactly because
 *                                the time-zone lookup of non-geographic numbers uses the country-level zones
 *   `<k><digits> <idx>`          one entry: the prefix digits after the calling code, written as k (one base-36
 *                                digit: how many leading digits are shared with the previous entry of the section)
 *                                plus the remaining digits; idx = value index in base 36, or `-` for "no data"
 * timezones.txt.gz ends with `%zones` and `<zone><TAB><ISO country>` lines.
 * Lines starting with `#` are comments. Output is deterministic (no timestamps), so a rebuild only diffs when
 * the sources change.
 *
 * Usage: npx tsx scripts/build-phone-data.ts [--resources DIR] [--zoneinfo DIR] [--out DIR]
 *   --resources  libphonenumber resources folder holding carrier/, geocoding/, timezones/
 *                (required: the `resources` folder of a checkout of github.com/google/libphonenumber)
 *   --zoneinfo   folder with zone.tab and tzdata.zi (default /usr/share/zoneinfo)
 *   --out        output folder (default data/phone)
 */
import { mkdirSync, readFileSync, readdirSync, writeFileSync, existsSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')

/** Marker value for "no data" entries (a hole cut into a parent prefix's range). */
const NONE = -1

/** A digit trie node. `val` is the value index of a source entry ending here (undefined: no entry here). */
interface TrieNode {
  ch: Array<TrieNode | undefined>
  val: number | undefined
  /** ORTC: the values that make this subtree cheapest; `base` its cost without the entry at the node itself. */
  best?: Set<number>
}

/** A compiled section: the distinct values and the minimal entries (prefix after cc → value index or NONE). */
export interface CompiledSection {
  cc: string
  values: string[]
  entries: Array<[string, number]>
  /** The source's value for the calling code itself (exact, not longest-prefix), when it has one. */
  ccValue: number | null
  sourceEntries: number
}

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(name)
  const v = i >= 0 ? process.argv[i + 1] : undefined
  return v ?? def
}

/** Reads a `prefix|value` file: comments (#) and blank lines skipped, whitespace trimmed. */
export function readPrefixFile(path: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const raw of readFileSync(path, 'utf8').split('\n')) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#')) continue
    const bar = line.indexOf('|')
    if (bar <= 0) throw new Error(`${path}: malformed line ${JSON.stringify(line)}`)
    const prefix = line.slice(0, bar)
    const value = line.slice(bar + 1).trim()
    if (!/^[0-9]{1,20}$/.test(prefix)) throw new Error(`${path}: bad prefix ${JSON.stringify(prefix)}`)
    if (value.includes('\t')) throw new Error(`${path}: tab in value ${JSON.stringify(value)}`)
    out.set(prefix, value)
  }
  return out
}

/**
 * Minimal longest-prefix table equivalent to `source` (prefixes including the calling code `cc`).
 * Throws if the result does not reproduce every source entry.
 */
export function compileSection(cc: string, source: Map<string, string>): CompiledSection {
  const values = [...new Set(source.values())].sort()
  const index = new Map(values.map((v, i) => [v, i]))
  const root: TrieNode = { ch: [], val: undefined }
  for (const [prefix, value] of source) {
    if (!prefix.startsWith(cc)) throw new Error(`prefix ${prefix} is outside calling code ${cc}`)
    let node = root
    for (const c of prefix.slice(cc.length)) {
      const d = c.charCodeAt(0) - 48
      node = node.ch[d] ??= { ch: [], val: undefined }
    }
    node.val = index.get(value)
  }

  // Pass 1 (bottom-up): for each node, the set of values that minimise the entries of its subtree, given that
  // children absent from the trie keep the node's original (inherited) answer.
  const up = (node: TrieNode, inherited: number): void => {
    const orig = node.val ?? inherited
    if (node.ch.length === 0) {
      node.best = new Set([orig])
      return
    }
    const count = new Map<number, number>()
    for (let d = 0; d < 10; d++) {
      const child = node.ch[d]
      if (child) up(child, orig)
      for (const v of child ? child.best! : [orig]) count.set(v, (count.get(v) ?? 0) + 1)
    }
    let max = 0
    for (const n of count.values()) if (n > max) max = n
    node.best = new Set([...count].filter(([, n]) => n === max).map(([v]) => v))
  }
  up(root, NONE)

  // Pass 2 (top-down): emit an entry only where the inherited value is not among the best values.
  const entries: Array<[string, number]> = []
  const down = (node: TrieNode, prefix: string, inherited: number, origInherited: number): void => {
    const orig = node.val ?? origInherited
    let assigned = inherited
    if (!node.best!.has(inherited)) {
      assigned = node.best!.has(orig) ? orig : Math.min(...node.best!)
      entries.push([prefix, assigned])
    }
    if (node.ch.length === 0) return
    for (let d = 0; d < 10; d++) {
      const child = node.ch[d]
      if (child) down(child, prefix + d, assigned, orig)
      else if (assigned !== orig) entries.push([prefix + d, orig])
    }
  }
  down(root, '', NONE, NONE)
  entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))

  // Verify: numbers under every source prefix (padded past the longest prefix) answer as before.
  const compiled = new Map(entries)
  let depth = 0
  for (const p of source.keys()) depth = Math.max(depth, p.length - cc.length + 1)
  const answer = (table: Map<string, number>, digits: string): number => {
    for (let len = digits.length; len >= 0; len--) {
      const v = table.get(digits.slice(0, len))
      if (v !== undefined) return v
    }
    return NONE
  }
  const original = new Map([...source].map(([p, v]) => [p.slice(cc.length), index.get(v)!]))
  for (const p of original.keys()) {
    for (const d of ['0', '3', '5', '9']) {
      const probe = p.padEnd(depth, d)
      if (answer(compiled, probe) !== answer(original, probe)) throw new Error(`compile check failed for ${cc} ${probe}`)
    }
  }
  const ccValue = source.get(cc)
  return { cc, values, entries, ccValue: ccValue === undefined ? null : index.get(ccValue)!, sourceEntries: source.size }
}

/** Serialises compiled sections into the text format described at the top of this file. */
export function serialise(kind: string, header: string[], sections: CompiledSection[], trailer = ''): string {
  const out: string[] = [`# riskcheck phone data: ${kind}`, ...header.map((h) => `# ${h}`)]
  for (const s of sections.sort((a, b) => a.cc.localeCompare(b.cc))) {
    out.push(`@${s.cc} ${s.entries.length}`)
    out.push(['v', ...s.values].join('\t'))
    if (s.ccValue !== null) out.push(`c ${s.ccValue.toString(36)}`)
    let prev = ''
    for (const [digits, v] of s.entries) {
      let k = 0
      while (k < prev.length && k < digits.length && k < 35 && prev[k] === digits[k]) k++
      out.push(`${k.toString(36)}${digits.slice(k)} ${v === NONE ? '-' : v.toString(36)}`)
      prev = digits
    }
  }
  return out.join('\n') + '\n' + trailer
}

/** Zone → ISO country from zone.tab, following tzdata.zi links for zone names zone.tab does not list. */
function readZoneCountries(zoneinfo: string, zones: Iterable<string>): Map<string, string> {
  const tab = new Map<string, string>()
  for (const line of readFileSync(join(zoneinfo, 'zone.tab'), 'utf8').split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue
    const [cc, , zone] = line.split('\t')
    if (cc && zone) tab.set(zone, cc)
  }
  const links = new Map<string, string>()
  for (const line of readFileSync(join(zoneinfo, 'tzdata.zi'), 'utf8').split('\n')) {
    if (!line.startsWith('L ')) continue
    const [, target, alias] = line.split(' ')
    if (target && alias) links.set(alias, target)
  }
  const out = new Map<string, string>()
  for (const zone of zones) {
    let z: string | undefined = zone
    for (let hops = 0; z !== undefined && hops < 4 && !tab.has(z); hops++) z = links.get(z)
    const cc = z === undefined ? undefined : tab.get(z)
    if (cc) out.set(zone, cc)
  }
  return out
}

function tzdataVersion(zoneinfo: string): string {
  const first = readFileSync(join(zoneinfo, 'tzdata.zi'), 'utf8').split('\n', 1)[0] ?? ''
  return first.replace(/^# version /, '').trim() || 'unknown'
}

function sourceCommit(resources: string): string {
  const sources = join(resources, '..', 'SOURCES.md')
  if (!existsSync(sources)) return 'unknown'
  return /commit ([0-9a-f]{40})/.exec(readFileSync(sources, 'utf8'))?.[1] ?? 'unknown'
}

interface KindStats {
  file: string
  sections: number
  sourceEntries: number
  entries: number
  textBytes: number
  gzipBytes: number
}

function main(): void {
  const given = arg('--resources', '')
  if (given === '') {
    process.stderr.write('build-phone-data: --resources DIR is required (the resources folder of a github.com/google/libphonenumber checkout)\n')
    process.exit(64)
  }
  const resources = resolve(given)
  const zoneinfo = resolve(arg('--zoneinfo', '/usr/share/zoneinfo'))
  const outDir = resolve(arg('--out', join(ROOT, 'data', 'phone')))
  mkdirSync(outDir, { recursive: true })
  const commit = sourceCommit(resources)
  const origin = `google/libphonenumber@${commit}`
  const formatNote = [
    'format: "@<cc> <n>" section, "v<TAB>values", then "<k><digits> <idx>" (k = digits shared with previous entry, base 36;',
    'digits follow the calling code; idx base 36, "-" = no data). Longest prefix wins. See scripts/build-phone-data.ts.',
  ]
  const stats: Record<string, KindStats> = {}

  const write = (kind: string, text: string, sections: CompiledSection[]) => {
    const file = `${kind}.txt.gz`
    const gz = gzipSync(Buffer.from(text, 'utf8'), { level: 9 })
    writeFileSync(join(outDir, file), gz)
    stats[kind] = {
      file,
      sections: sections.length,
      sourceEntries: sections.reduce((n, s) => n + s.sourceEntries, 0),
      entries: sections.reduce((n, s) => n + s.entries.length, 0),
      textBytes: Buffer.byteLength(text),
      gzipBytes: gz.length,
    }
  }

  for (const [kind, dir] of [
    ['carrier', 'carrier/en'],
    ['geocoding', 'geocoding/en'],
  ] as const) {
    const sections: CompiledSection[] = []
    for (const f of readdirSync(join(resources, dir)).sort()) {
      if (!f.endsWith('.txt')) continue
      const cc = f.slice(0, -4)
      sections.push(compileSection(cc, readPrefixFile(join(resources, dir, f))))
    }
    write(kind, serialise(kind, [`source: ${origin} resources/${dir} (Apache-2.0)`, ...formatNote], sections), sections)
  }

  // Time zones: one source file for all calling codes; split by calling code (longest cc that prefixes the line —
  // calling codes are prefix-free, and the geocoding/carrier files name them).
  const tzSource = readPrefixFile(join(resources, 'timezones', 'map_data.txt'))
  const ccs = new Set<string>()
  for (const p of tzSource.keys()) if (p.length <= 3) ccs.add(p)
  const byCc = new Map<string, Map<string, string>>()
  for (const [p, v] of tzSource) {
    let cc: string | undefined
    for (let len = 1; len <= 3 && !cc; len++) if (ccs.has(p.slice(0, len))) cc = p.slice(0, len)
    if (!cc) throw new Error(`time zone prefix ${p} has no calling-code entry`)
    if (!byCc.has(cc)) byCc.set(cc, new Map())
    byCc.get(cc)!.set(p, v)
  }
  const tzSections = [...byCc].map(([cc, m]) => compileSection(cc, m))
  const zones = new Set<string>()
  for (const v of tzSource.values()) for (const z of v.split('&')) zones.add(z)
  const zoneCountries = readZoneCountries(zoneinfo, zones)
  const tzVersion = tzdataVersion(zoneinfo)
  const trailer = ['%zones', ...[...zoneCountries].sort(([a], [b]) => a.localeCompare(b)).map(([z, c]) => `${z}\t${c}`)].join('\n') + '\n'
  write(
    'timezones',
    serialise(
      'timezones',
      [
        `source: ${origin} resources/timezones/map_data.txt (Apache-2.0); values are "&"-separated IANA zone names`,
        `zone countries: tz database ${tzVersion} zone.tab + tzdata.zi links (public domain), after the "%zones" line`,
        ...formatNote,
      ],
      tzSections,
      trailer,
    ),
    tzSections,
  )
  const missing = [...zones].filter((z) => !zoneCountries.has(z))

  const manifest = {
    format: 1,
    source: { repository: 'google/libphonenumber', commit, license: 'Apache-2.0' },
    tzdata: tzVersion,
    zonesWithoutCountry: missing,
    tables: stats,
  }
  writeFileSync(join(outDir, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n')
  for (const [k, s] of Object.entries(stats)) {
    console.log(
      `${k.padEnd(10)} ${String(s.sections).padStart(4)} sections  ${String(s.sourceEntries).padStart(7)} → ${String(s.entries).padStart(7)} entries  ` +
        `${(s.textBytes / 1024).toFixed(0).padStart(5)} KB text  ${(s.gzipBytes / 1024).toFixed(0).padStart(5)} KB gzip`,
    )
  }
  if (missing.length) console.log(`zones without a country: ${missing.join(', ')}`)
  console.log(`wrote ${outDir}`)
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main()
