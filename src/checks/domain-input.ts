/**
 * Shared input parsing for the domain lookups (domain age, email authentication). The input is a domain, a URL or an
 * email address; the host is extracted with `tldts`, converted to lower-case ASCII (UTS #46 via `domainToASCII`), and
 * its registrable domain taken from the ICANN section of the Public Suffix List (unknown TLDs count as one label). The
 * input is capped at {@link MAX_DOMAIN_INPUT_LENGTH} first; no regular expression runs on it.
 */
import { isIP } from 'node:net'
import { domainToASCII } from 'node:url'
import { getDomain, getHostname } from 'tldts'

/** Longest input (in UTF-16 code units) that is parsed at all; longer inputs have no parsable host. */
export const MAX_DOMAIN_INPUT_LENGTH = 2048

/** The host found in a domain / URL / email input. */
export interface ParsedDomainInput {
  /** ASCII (punycode) host, lower-case, without trailing dot; the canonical text form for an IP literal */
  host: string
  /** the registrable domain (eTLD+1, ICANN PSL section) of `host`; null for an IP, a single label or a bare public suffix */
  registrableDomain: string | null
  /** true when the host is an IP literal (only returned with `allowIp: true`) */
  isIp: boolean
}

/** Options of {@link parseDomainInput}. */
export interface ParseDomainInputOptions {
  /**
   * Accept an IP-literal host (`http://1.2.3.4/`, `x@[::1]`) and return it with `isIp: true`.
   * Default false: the domain lookups have nothing to ask RDAP or DNS about an IP address, so an IP host
   * makes the input unparsable for them (→ INVALID_INPUT).
   */
  allowIp?: boolean
}

/**
 * Extract the host of a domain, URL or email address.
 *
 * Returns null when there is no parsable host name: a non-string, an empty or over-long string, a host with
 * an empty / over-long label or a character outside letters, digits, `-` and `_`, invalid punycode, or an
 * all-numeric last label. An IP-literal host also gives null unless `opts.allowIp` is set. Never throws.
 * It does not check that the domain exists (that is the lookups' job).
 *
 * @example
 * parseDomainInput('x@eu.corp.com')            // { host: 'eu.corp.com', registrableDomain: 'corp.com', isIp: false }
 * parseDomainInput('https://Bücher.DE.:8080/a') // { host: 'xn--bcher-kva.de', registrableDomain: 'xn--bcher-kva.de', isIp: false }
 * parseDomainInput('localhost')                // { host: 'localhost', registrableDomain: null, isIp: false }
 * parseDomainInput('http://1.2.3.4/')          // null
 * parseDomainInput('not a domain')             // null
 */
export function parseDomainInput(input: unknown, opts: ParseDomainInputOptions = {}): ParsedDomainInput | null {
  if (typeof input !== 'string') return null
  if (input.length > MAX_DOMAIN_INPUT_LENGTH) return null
  const trimmed = input.trim()
  if (trimmed === '') return null

  const rawHost = getHostname(trimmed)
  if (rawHost === null || rawHost === '') return null
  const host = stripTrailingDots(rawHost)
  if (host === '') return null

  const unbracketed = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
  if (isIP(unbracketed) !== 0) return ipResult(unbracketed, opts)

  const ascii = domainToASCII(host)
  if (ascii === '') return null
  // WHATWG host parsing turns legacy numeric forms ("0x7f.1") into dotted quads: still an IP, not a name.
  if (isIP(ascii) !== 0) return ipResult(ascii, opts)
  const name = stripTrailingDots(ascii)
  if (!isValidAsciiHostname(name)) return null

  return { host: name, registrableDomain: getDomain(name) ?? null, isIp: false }
}

/**
 * The organizational domain of a host for DMARC (RFC 7489 §3.2): its registrable domain per the Public
 * Suffix List (ICANN section, via `tldts`). Accepts Unicode or ASCII hosts (the answer is punycode).
 * Returns null for an IP, a single label, a bare public suffix or an unparsable host.
 *
 * @example
 * getOrganizationalDomain('eu.corp.com')   // 'corp.com'
 * getOrganizationalDomain('a.b.example.co.uk') // 'example.co.uk'
 * getOrganizationalDomain('co.uk')         // null
 */
export function getOrganizationalDomain(host: string): string | null {
  return parseDomainInput(host)?.registrableDomain ?? null
}

function ipResult(ip: string, opts: ParseDomainInputOptions): ParsedDomainInput | null {
  if (opts.allowIp !== true) return null
  return { host: ip.toLowerCase(), registrableDomain: null, isIp: true }
}

function stripTrailingDots(s: string): string {
  let end = s.length
  while (end > 0 && s.charCodeAt(end - 1) === 0x2e) end--
  return s.slice(0, end)
}

/** LDH (+ underscore, seen in real host names) labels of 1–63 chars, ≤ 253 total, last label not all digits. */
function isValidAsciiHostname(name: string): boolean {
  if (name.length === 0 || name.length > 253) return false
  const labels = name.split('.')
  for (const label of labels) {
    if (label.length === 0 || label.length > 63) return false
    for (let i = 0; i < label.length; i++) {
      const c = label.charCodeAt(i)
      const ok =
        (c >= 0x61 && c <= 0x7a) || // a-z
        (c >= 0x30 && c <= 0x39) || // 0-9
        c === 0x2d || // -
        c === 0x5f // _
      if (!ok) return false
    }
    if (label.startsWith('-') || label.endsWith('-')) return false
  }
  const last = labels[labels.length - 1] ?? ''
  let allDigits = true
  for (let i = 0; i < last.length; i++) {
    const c = last.charCodeAt(i)
    if (c < 0x30 || c > 0x39) allDigits = false
  }
  return !allDigits
}
