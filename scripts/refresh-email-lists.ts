/**
 * Regenerates the email list snapshots in data/email/ from their upstream npm packages plus the curated
 * additions/removals kept in this file (the disposable exceptions live in src/data/build-email-lists.ts,
 * shared with `riskcheck data update`).
 *
 *   npx tsx scripts/refresh-email-lists.ts            # fetch the latest packages with `npm pack`
 *   npx tsx scripts/refresh-email-lists.ts --dir DIR  # use already unpacked packages: DIR/freemail/package, …
 *
 * Outputs (each file starts with '#' comment lines naming its source, version, license and date):
 * - data/email/free-providers.txt     freemail's `free.txt` (ISC) ∪ FREE_ADD − FREE_REMOVE − disposable
 * - data/email/role-local-parts.txt   RFC 2142 ∪ role-based-email-addresses (MIT) MARKETING+NOTIFICATION+
 *                                     MEETING ∪ ROLE_ADD − ROLE_REMOVE
 * - data/email/disposable-allow.txt   entries of the installed `disposable-email-domains` package that must
 *                                     never match: ICANN public suffixes (the parent-domain walk would flag
 *                                     every domain under them) ∪ DISPOSABLE_ALLOW (src/data/build-email-lists.ts,
 *                                     shared with `riskcheck data update`)
 * data/email/typo-targets.txt is curated by hand and only checked here (every entry must parse).
 *
 * After a refresh, update the pinned sizes in src/checks/email/lists.test.ts (the script prints them) and
 * the dates/versions in data/email/SOURCES.md.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync, existsSync, mkdirSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseEmailAddress } from '../src/checks/email/syntax.js'
import { DISPOSABLE_ALLOW, isAllowedDisposableEntry } from '../src/data/build-email-lists.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const OUT = join(ROOT, 'data', 'email')
const require = createRequire(import.meta.url)

/** RFC 2142 mailbox names (§3–§5). */
export const RFC2142 = [
  'info', 'marketing', 'sales', 'support', 'abuse', 'noc', 'security',
  'postmaster', 'hostmaster', 'usenet', 'news', 'webmaster', 'www', 'uucp', 'ftp',
]

/** Common role names beyond RFC 2142 (curated for riskcheck). */
export const ROLE_ADD = [
  'accounting', 'accounts', 'accountspayable', 'accountsreceivable', 'admin', 'admins', 'administrator',
  'administration', 'admissions', 'all', 'allstaff', 'alumni', 'billing', 'bookkeeping', 'bounce', 'bounces',
  'careers', 'ceo', 'cfo', 'clients', 'compliance', 'contact', 'contactus', 'contracts', 'cto', 'daemon',
  'dev', 'developer', 'developers', 'devnull', 'devops', 'directors', 'dmarc', 'dpo', 'editor', 'editorial',
  'engineering', 'enquiries', 'enquiry', 'everyone', 'facilities', 'finance', 'founders', 'frontdesk',
  'gdpr', 'general', 'hello', 'helpdesk', 'hiring', 'hr', 'humanresources', 'inbox', 'inquiries',
  'investor', 'investors', 'invoice', 'invoices', 'ir', 'it', 'jobs', 'kontakt', 'legal', 'list',
  'listserv', 'mail', 'mailbox', 'mailer-daemon', 'majordomo', 'management', 'members', 'membership',
  'nobody', 'null', 'office', 'operations', 'ops', 'orders', 'payments', 'payroll', 'people', 'privacy',
  'procurement', 'purchasing', 'qa', 'reception', 'recruiting', 'recruitment', 'registrar', 'root',
  'secretary', 'shipping', 'staff', 'students', 'sysadmin', 'team', 'tech', 'test', 'undisclosed-recipients',
]

/** Entries of the upstream role package not treated as role names. */
export const ROLE_REMOVE: string[] = []

/** Free mailbox providers missing from freemail (curated). */
export const FREE_ADD = [
  'proton.me', 'pm.me', 'protonmail.ch', 'tutanota.com', 'tutanota.de', 'tutamail.com', 'tuta.io', 'tuta.com',
  'keemail.me', 'hey.com', 'duck.com', 'daum.net', 'kakao.com', 'yandex.com', 'ya.ru', 'mail.com',
  'email.com', 'gmx.us', 'outlook.de', 'outlook.fr', 'outlook.es', 'outlook.it', 'outlook.jp', 'icloud.com',
  'zohomail.com', 'zohomail.eu', 'skiff.com', 'posteo.de', 'posteo.net', 'mailbox.org', 'disroot.org',
]

/** freemail entries that are not free mailbox domains (company or non-mail domains). */
export const FREE_REMOVE = ['facebook.com']

function pack(name: string, dir: string | undefined): { dir: string; version: string; cleanup: () => void } {
  if (dir) {
    const d = join(dir, name, 'package')
    const version = JSON.parse(readFileSync(join(d, 'package.json'), 'utf8')).version as string
    return { dir: d, version, cleanup: () => {} }
  }
  const tmp = mkdtempSync(join(tmpdir(), 'riskcheck-lists-'))
  const out = execFileSync('npm', ['pack', name, '--silent', '--pack-destination', tmp], { encoding: 'utf8' })
  const tgz = out.trim().split('\n').pop() ?? ''
  const unpack = join(tmp, 'x')
  mkdirSync(unpack)
  execFileSync('tar', ['xzf', join(tmp, tgz), '-C', unpack])
  const d = join(unpack, 'package')
  const version = JSON.parse(readFileSync(join(d, 'package.json'), 'utf8')).version as string
  return { dir: d, version, cleanup: () => rmSync(tmp, { recursive: true, force: true }) }
}

function lines(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim().toLowerCase())
    .filter((l) => l !== '' && !l.startsWith('#'))
}

/** a domain that can hold mailboxes per our own syntax check, in ASCII form */
function asciiMailDomain(d: string): string | null {
  const p = parseEmailAddress(`x@${d}`)
  return p.ok ? p.asciiDomain : null
}

function write(file: string, header: string[], entries: Iterable<string>): number {
  const sorted = [...new Set(entries)].sort()
  const body = header.map((h) => `# ${h}`).join('\n') + '\n' + sorted.join('\n') + '\n'
  writeFileSync(join(OUT, file), body)
  return sorted.length
}

function main(): void {
  const args = process.argv.slice(2)
  const dirIdx = args.indexOf('--dir')
  const dir = dirIdx >= 0 ? args[dirIdx + 1] : undefined
  const today = new Date().toISOString().slice(0, 10)
  if (!existsSync(OUT)) mkdirSync(OUT, { recursive: true })

  // ---- disposable (read at runtime from node_modules; here only the allow list) ----
  const dispPkg = require('disposable-email-domains/package.json') as { version: string }
  const exact = require('disposable-email-domains') as string[]
  const wildcard = require('disposable-email-domains/wildcard.json') as string[]
  const allow = new Set(DISPOSABLE_ALLOW.map((d) => d.toLowerCase()))
  for (const d of [...exact, ...wildcard]) if (isAllowedDisposableEntry(d)) allow.add(d.toLowerCase())
  const nAllow = write(
    'disposable-allow.txt',
    [
      `Entries of disposable-email-domains ${dispPkg.version} (MIT) that riskcheck never treats as disposable:`,
      'ICANN public suffixes (the parent-domain walk would flag every domain below them) and curated exceptions.',
      `Generated by scripts/refresh-email-lists.ts on ${today}. Do not edit; change DISPOSABLE_ALLOW in src/data/build-email-lists.ts.`,
    ],
    allow,
  )
  const disposable = new Set<string>()
  for (const d of [...exact, ...wildcard]) {
    const a = asciiMailDomain(d)
    if (a && !allow.has(d.toLowerCase())) disposable.add(a)
  }

  // ---- free providers ----
  const freemail = pack('freemail', dir)
  const free = new Set<string>()
  const dropped: string[] = []
  for (const d of [...lines(readFileSync(join(freemail.dir, 'data', 'free.txt'), 'utf8')), ...FREE_ADD]) {
    const a = asciiMailDomain(d)
    if (a === null) dropped.push(d)
    else free.add(a)
  }
  for (const d of FREE_REMOVE) free.delete(d)
  const alsoDisposable = [...free].filter((d) => disposable.has(d))
  for (const d of alsoDisposable) free.delete(d)
  const nFree = write(
    'free-providers.txt',
    [
      `Free webmail / consumer mailbox domains. Source: npm freemail ${freemail.version} data/free.txt (ISC, (c) Will White)`,
      'plus the curated FREE_ADD, minus FREE_REMOVE and minus domains on the disposable list.',
      `Generated by scripts/refresh-email-lists.ts on ${today}. Do not edit by hand.`,
    ],
    free,
  )
  freemail.cleanup()

  // ---- role local parts ----
  const roles = pack('role-based-email-addresses', dir)
  const mod = require(join(roles.dir, 'src', 'index.js')) as Record<string, string[]>
  const role = new Set<string>()
  for (const list of [RFC2142, mod.MARKETING ?? [], mod.NOTIFICATION ?? [], mod.MEETING ?? [], ROLE_ADD]) {
    for (const r of list) {
      const v = r.trim().toLowerCase()
      if (v !== '' && parseEmailAddress(`${v}@a.org`).ok) role.add(v)
    }
  }
  for (const r of ROLE_REMOVE) role.delete(r)
  const nRole = write(
    'role-local-parts.txt',
    [
      'Role (non-personal) local parts. Sources: RFC 2142; npm role-based-email-addresses',
      `${roles.version} (MIT, (c) Mixmax, Inc) categories MARKETING, NOTIFICATION and MEETING; the curated ROLE_ADD.`,
      `Generated by scripts/refresh-email-lists.ts on ${today}. Do not edit by hand.`,
    ],
    role,
  )
  roles.cleanup()

  // ---- typo targets (curated; checked only) ----
  const targets = lines(readFileSync(join(OUT, 'typo-targets.txt'), 'utf8'))
  const badTargets = targets.map((t) => t.replace(/^[!-]/, '')).filter((t) => asciiMailDomain(t) !== t)
  if (badTargets.length > 0) throw new Error(`typo-targets.txt has entries that do not parse: ${badTargets.join(', ')}`)

  const squatsNotFree = targets.filter((t) => t.startsWith('-') && !free.has(t.slice(1)))
  if (squatsNotFree.length > 0) console.warn(`typo-targets.txt: typo-squat entries no longer on the free list: ${squatsNotFree.join(', ')}`)
  console.log(
    JSON.stringify(
      {
        disposableVersion: dispPkg.version,
        disposableExact: exact.length,
        disposableWildcard: wildcard.length,
        disposableAllow: nAllow,
        freemailVersion: freemail.version,
        freeProviders: nFree,
        freeDropped: dropped,
        freeAlsoDisposable: alsoDisposable,
        roleVersion: roles.version,
        roleLocalParts: nRole,
        typoTargets: targets.filter((t) => !t.startsWith('-')).length,
      },
      null,
      2,
    ),
  )
}

main()
