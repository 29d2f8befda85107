/**
 * Local IP blocklists configured by the user (`ip.blocklists`): each a name and either a list of CIDRs/addresses or
 * the path of a text file with one per line. Loaded once at construction into merged sorted range tables.
 *
 * File format (covers plain lists, FireHOL `.netset` and Spamhaus DROP): the first token of each line, a `#` or `;`
 * starts a comment, blank lines are skipped, lines whose first token is not a network are skipped (headers). Inline
 * arrays are strict: an entry that is not a network is a configuration error.
 */
import { readFileSync } from 'node:fs'
import { parseCidr, type ParsedIp } from './parse.js'
import { buildIpv4Table, buildIpv6Table, type Ipv4RangeTable, type Ipv6RangeTable, type Ipv4Row, type Ipv6Row } from './range-table.js'

/** One loaded blocklist. */
export interface Blocklist {
  name: string
  v4: Ipv4RangeTable
  v6: Ipv6RangeTable
  /** networks read (before merging) */
  networks: number
}

/** Longest blocklist name accepted. */
const MAX_NAME = 100

/** Tokens of a list file (see the module comment). */
function fileTokens(text: string): string[] {
  const out: string[] = []
  let pos = 0
  while (pos < text.length) {
    let nl = text.indexOf('\n', pos)
    if (nl < 0) nl = text.length
    let line = text.slice(pos, nl)
    pos = nl + 1
    const cut = Math.min(...[line.indexOf('#'), line.indexOf(';')].map((i) => (i < 0 ? line.length : i)))
    line = line.slice(0, cut).trim()
    if (!line) continue
    const space = line.search(/\s/)
    out.push(space < 0 ? line : line.slice(0, space))
  }
  return out
}

/**
 * Loads one blocklist. `option` names it in errors (`ip.blocklists.spamhaus`). Throws an Error naming the option
 * when a file cannot be read or has no network at all, or an inline entry is not a network.
 */
export function loadBlocklist(name: string, source: readonly string[] | string, option: string): Blocklist {
  if (typeof name !== 'string' || name === '' || name.length > MAX_NAME) throw new Error(`option ${option}: a blocklist needs a name of 1 to ${MAX_NAME} characters`)
  let tokens: string[]
  let strict: boolean
  if (typeof source === 'string') {
    let text: string
    try {
      text = readFileSync(source, 'utf8')
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code
      throw new Error(`option ${option}: ${code === 'ENOENT' ? 'file not found' : `cannot read the file: ${(e as Error).message}`} (${source})`, { cause: e })
    }
    tokens = fileTokens(text)
    strict = false
  } else if (Array.isArray(source)) {
    tokens = source.map((s) => (typeof s === 'string' ? s.trim() : String(s)))
    strict = true
  } else {
    throw new Error(`option ${option}: must be an array of CIDRs or the path of a list file`)
  }
  const v4: Ipv4Row[] = []
  const v6: Ipv6Row[] = []
  for (const t of tokens) {
    const c = parseCidr(t)
    if (!c) {
      if (strict) throw new Error(`option ${option}: not an IP network: ${JSON.stringify(t).slice(0, 80)}`)
      continue
    }
    if (c.version === 4) v4.push({ first: c.first, last: c.last, payload: 0 })
    else v6.push({ first: c.first, last: c.last, payload: 0 })
  }
  if (typeof source === 'string' && v4.length + v6.length === 0 && tokens.length > 0)
    throw new Error(`option ${option}: no IP network found in the file (${source})`)
  return { name, v4: buildIpv4Table(v4, true).table, v6: buildIpv6Table(v6, true).table, networks: v4.length + v6.length }
}

/** True when the address is on the list. */
export function isOnBlocklist(list: Blocklist, ip: ParsedIp): boolean {
  return ip.version === 4 ? list.v4.find(ip.value) >= 0 : list.v6.find(ip.words) >= 0
}
