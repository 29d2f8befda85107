/**
 * What every CLI command shares: the IO it is given, the command shape, usage errors and exit codes, error messages,
 * and the lookup flags that build the riskcheck options. The CLI core (./main.ts) and each command module import
 * this module; none imports another command or the core, so there is no import loop.
 */
import type { ParseArgsConfig } from 'node:util'
import { isRiskcheckError } from '../errors.js'
import type { RiskcheckOptions, RiskcheckWarning } from '../options.js'
import { formatPolicyIssues, loadPolicyFile, PolicyFileError, type PolicyFile } from '../scoring/policy-file.js'
import { SMTP_DEFAULTS } from '../sources/smtp/defaults.js'

/** Where the CLI reads and writes; `process` fits. */
export interface CliIO {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean }
  stdout: NodeJS.WritableStream & { isTTY?: boolean }
  stderr: NodeJS.WritableStream
  env?: Record<string, string | undefined>
}

/** A CLI command. `run` gets the arguments after the command name and returns the exit code. */
export interface CliCommand {
  name: string
  summary: string
  run(args: string[], io: CliIO): Promise<number>
}

/**
 * Exit codes, the same for every command (README "CLI"): 0 done · 1 something failed (an internal error, a source or
 * a job that failed — retrying may help) · 2 an input or request was rejected (fix the input) · 64 bad usage
 * (EX_USAGE) · 75 another process holds a lock, try again later (EX_TEMPFAIL: `data update`) · 130 interrupted by
 * Ctrl-C.
 */
export const EXIT = { ok: 0, failed: 1, rejected: 2, usage: 64, locked: 75, interrupted: 130 } as const

/** A command-line mistake: printed with the command's prefix, exit 64. */
export class UsageError extends Error {
  override readonly name = 'UsageError'
}

/** The exit code of an error a lookup rejected with: 2 for a rejected input (4xx codes), else 1. */
export function exitCodeOf(error: unknown): number {
  return isRiskcheckError(error) && error.status < 500 ? EXIT.rejected : EXIT.failed
}

/** The message of an error without a leading `riskcheck: ` (options errors carry one; the CLI adds its own). */
export function messageOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error)
  return text.replace(/^(?:riskcheck(?: [a-z-]+)?: )+/, '')
}

/** Writes `prefix: message` (e.g. `riskcheck bulk: …`) on stderr. */
export function printError(io: Pick<CliIO, 'stderr'>, prefix: string, error: unknown): void {
  io.stderr.write(`${prefix}: ${messageOf(error)}\n`)
}

/** A whole-number flag value ≥ `min`; undefined when absent; a UsageError otherwise. */
export function wholeNumber(flag: string, value: unknown, min = 0): number | undefined {
  if (value === undefined) return undefined
  const n = Number(value)
  if (String(value).trim() === '' || !Number.isSafeInteger(n) || n < min) {
    throw new UsageError(`--${flag} must be a whole number ≥ ${min} (got ${String(value)})`)
  }
  return n
}

/** Prints a riskcheck warning (broken resolver, blocked port 25) on stderr, once each. */
export function stderrWarning(io: Pick<CliIO, 'stderr'>): (w: RiskcheckWarning) => void {
  return (w) => io.stderr.write(`riskcheck: warning: ${w.message}\n`)
}

type Options = NonNullable<ParseArgsConfig['options']>

/** Flags every lookup accepts: they build the riskcheck options. */
export const GLOBAL_FLAGS: Options = {
  mode: { type: 'string' },
  offline: { type: 'boolean' },
  'dns-server': { type: 'string', multiple: true },
  'dns-timeout': { type: 'string' },
  now: { type: 'string' },
  'smtp-port': { type: 'string' },
  'smtp-timeout': { type: 'string' },
  'smtp-total-timeout': { type: 'string' },
  'smtp-max-rejections': { type: 'string' },
  'smtp-proxy': { type: 'string', multiple: true },
  helo: { type: 'string' },
  'mail-from': { type: 'string' },
  'smtp-allow-private-hosts': { type: 'boolean' },
  'city-db': { type: 'string' },
  'country-db': { type: 'string' },
  'asn-db': { type: 'string' },
  'isp-db': { type: 'string' },
  'anonymous-db': { type: 'string' },
  'connection-type-db': { type: 'string' },
  'data-dir': { type: 'string' },
  'rdap-bootstrap-url': { type: 'string' },
  'rdap-timeout': { type: 'string' },
  'no-rdap': { type: 'boolean' },
  'bypass-cache': { type: 'boolean' },
  policy: { type: 'string' },
  compact: { type: 'boolean' },
  concurrency: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
}

/** Help lines of {@link GLOBAL_FLAGS}. */
export const GLOBAL_HELP: Array<[string, string]> = [
  ['--mode live|test', 'test: deterministic answers for the documented magic inputs, no network, no credits'],
  ['--offline', 'no network at all (local data only; network fields null; answers cached under their own key)'],
  ['--dns-server IP[:PORT]', 'DNS resolver to use (repeatable), e.g. 1.1.1.1 or [::1]:5353; default: the system resolvers'],
  ['--dns-timeout MS', 'timeout of one DNS query try (default 3000)'],
  ['--now ISO-8601', 'fix the clock (reproducible ages and timestamps)'],
  ['--smtp-port N', 'port of the receiving mail servers (default 25)'],
  ['--smtp-timeout MS', `SMTP connect/reply timeout (default ${SMTP_DEFAULTS.timeoutMs})`],
  ['--smtp-total-timeout MS', `time budget of one mailbox check, all MX hosts together (default ${SMTP_DEFAULTS.totalTimeoutMs})`],
  ['--smtp-max-rejections N', `rejected recipients before a fresh SMTP session (default ${SMTP_DEFAULTS.maxRejectionsPerSession})`],
  ['--smtp-proxy URL', 'socks5://[user:pass@]host[:port] for the mailbox check (repeatable: used in turn)'],
  ['--helo NAME / --mail-from ADDR', 'EHLO name and MAIL FROM address of the mailbox check'],
  ['--smtp-allow-private-hosts', 'allow MX hosts on private/loopback addresses (local testing only)'],
  ['--city-db, --country-db, --asn-db, --isp-db, --anonymous-db, --connection-type-db PATH', 'MaxMind-schema MMDB files (defaults: bundled open data)'],
  ['--data-dir DIR', 'answer from the data set that "riskcheck data update" keeps fresh in DIR (default: $RISKCHECK_DATA_DIR, else the bundled data)'],
  ['--rdap-bootstrap-url URL, --rdap-timeout MS', 'RDAP bootstrap file and timeout'],
  ['--no-rdap', 'do not ask RDAP (domain age unknown; email domain_age_days null)'],
  ['--bypass-cache', 'skip the result cache'],
  ['--policy FILE', 'scoring policy file (JSON or YAML: weights, thresholds, actions, rules, contexts; see riskcheck policy)'],
  ['--compact', 'one-line JSON (default when reading stdin)'],
  ['--concurrency N', 'lookups at once when reading stdin (default 8)'],
]

/**
 * Builds riskcheck options from parsed global flags (UsageError for a malformed number or date); `env` supplies
 * `RISKCHECK_DATA_DIR` when `--data-dir` is not given.
 */
export function optionsFromFlags(values: Record<string, unknown>, env: Record<string, string | undefined> = {}): RiskcheckOptions {
  const o: RiskcheckOptions = {}
  const dataDir = (values['data-dir'] as string | undefined) ?? env['RISKCHECK_DATA_DIR']
  if (dataDir !== undefined && dataDir.trim() !== '') o.dataDir = dataDir
  if (values.mode !== undefined) o.mode = values.mode as 'live' | 'test'
  if (values.offline) o.offline = true
  const dnsServers = values['dns-server'] as string[] | undefined
  const dnsTimeout = wholeNumber('dns-timeout', values['dns-timeout'])
  if (dnsServers || dnsTimeout !== undefined) o.dns = { ...(dnsServers ? { servers: dnsServers } : {}), ...(dnsTimeout !== undefined ? { timeoutMs: dnsTimeout } : {}) }
  const smtpPort = wholeNumber('smtp-port', values['smtp-port'])
  const smtpTimeout = wholeNumber('smtp-timeout', values['smtp-timeout'])
  const smtpTotal = wholeNumber('smtp-total-timeout', values['smtp-total-timeout'])
  const smtpRejections = wholeNumber('smtp-max-rejections', values['smtp-max-rejections'])
  const smtpProxy = values['smtp-proxy'] as string[] | undefined
  const smtpFlags = [smtpPort, smtpTimeout, smtpTotal, smtpRejections, smtpProxy, values.helo, values['mail-from'], values['smtp-allow-private-hosts']]
  if (smtpFlags.some((v) => v !== undefined))
    o.smtp = {
      ...(values['smtp-allow-private-hosts'] ? { allowPrivateHosts: true } : {}),
      ...(smtpPort !== undefined ? { port: smtpPort } : {}),
      ...(smtpTimeout !== undefined ? { timeoutMs: smtpTimeout } : {}),
      ...(smtpTotal !== undefined ? { totalTimeoutMs: smtpTotal } : {}),
      ...(smtpRejections !== undefined ? { maxRejectionsPerSession: smtpRejections } : {}),
      ...(smtpProxy ? { proxy: smtpProxy } : {}),
      ...(values.helo ? { heloName: values.helo as string } : {}),
      ...(values['mail-from'] ? { mailFrom: values['mail-from'] as string } : {}),
    }
  const ipMap = { 'city-db': 'cityDb', 'country-db': 'countryDb', 'asn-db': 'asnDb', 'isp-db': 'ispDb', 'anonymous-db': 'anonymousDb', 'connection-type-db': 'connectionTypeDb' } as const
  for (const [flag, key] of Object.entries(ipMap)) if (values[flag]) (o.ip ??= {})[key] = values[flag] as string
  const rdapTimeout = wholeNumber('rdap-timeout', values['rdap-timeout'])
  if (values['rdap-bootstrap-url'] || rdapTimeout !== undefined || values['no-rdap'])
    o.rdap = {
      ...(values['no-rdap'] ? { enabled: false } : {}),
      ...(values['rdap-bootstrap-url'] ? { bootstrapUrl: values['rdap-bootstrap-url'] as string } : {}),
      ...(rdapTimeout !== undefined ? { timeoutMs: rdapTimeout } : {}),
    }
  if (values.now !== undefined) {
    const t = new Date(values.now as string)
    if (Number.isNaN(t.getTime())) throw new UsageError(`--now must be an ISO 8601 date (got ${String(values.now)})`)
    o.now = () => new Date(t)
  }
  return o
}

/**
 * The policy file of `--policy`, loaded and validated; undefined without the flag. A file that cannot be used is
 * reported on stderr, every problem with its path and line, and gives null (exit 64).
 */
export async function policyFromFlags(values: Record<string, unknown>, io: Pick<CliIO, 'stderr'>, prefix = 'riskcheck'): Promise<PolicyFile | null | undefined> {
  const path = values.policy
  if (path === undefined) return undefined
  try {
    return await loadPolicyFile(String(path))
  } catch (e) {
    if (e instanceof PolicyFileError) {
      io.stderr.write(`${prefix}: --policy ${String(path)} is not a valid policy (${e.issues.length} error${e.issues.length === 1 ? '' : 's'}):\n`)
      for (const l of formatPolicyIssues(e.issues)) io.stderr.write(`  ${l}\n`)
    } else io.stderr.write(`${prefix}: --policy: cannot read ${String(path)}: ${messageOf(e)}\n`)
    return null
  }
}
