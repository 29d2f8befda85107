/**
 * The riskcheck command. A thin shell over the facade:
 *
 *   riskcheck <lookup> <input> [flags]     one input → the result as JSON
 *   riskcheck <lookup> [flags] < inputs    one input per line on stdin → one JSON line each, in input order
 *   riskcheck check --email … --ip … --phone … [--context signup]
 *   riskcheck <command> …                  further commands (bulk, serve, admin) registered in ./commands.ts
 *
 * Lookups come from the check registry: a new lookup appears here without touching this file.
 */
import { createInterface } from 'node:readline'
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { CHECKS, type SingleLookupType } from '../checks/registry.js'
import type { CliFlag } from '../checks/types.js'
import { isRiskcheckError } from '../errors.js'
import type { RiskcheckOptions, RiskcheckWarning } from '../options.js'
import { createRiskcheck, type Riskcheck } from '../riskcheck.js'
import { COMMANDS } from './commands.js'
import { VERSION } from '../version.js'

/** Where the CLI reads and writes; `process` fits. */
export interface CliIO {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean }
  stdout: NodeJS.WritableStream & { isTTY?: boolean }
  stderr: NodeJS.WritableStream
  env?: Record<string, string | undefined>
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
  helo: { type: 'string' },
  'mail-from': { type: 'string' },
  'smtp-allow-private-hosts': { type: 'boolean' },
  'city-db': { type: 'string' },
  'country-db': { type: 'string' },
  'asn-db': { type: 'string' },
  'isp-db': { type: 'string' },
  'anonymous-db': { type: 'string' },
  'connection-type-db': { type: 'string' },
  'rdap-bootstrap-url': { type: 'string' },
  'rdap-timeout': { type: 'string' },
  'no-rdap': { type: 'boolean' },
  'bypass-cache': { type: 'boolean' },
  compact: { type: 'boolean' },
  concurrency: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
}

const GLOBAL_HELP: Array<[string, string]> = [
  ['--mode live|test', 'test: deterministic answers for the documented magic inputs, no network, no credits'],
  ['--offline', 'no network at all (local data only; network fields null; answers cached under their own key)'],
  ['--dns-server HOST[:PORT]', 'DNS resolver to use (repeatable); default: the system resolvers'],
  ['--dns-timeout MS', 'timeout of one DNS query try (default 3000)'],
  ['--now ISO-8601', 'fix the clock (reproducible ages and timestamps)'],
  ['--smtp-port N', 'port of the receiving mail servers (default 25)'],
  ['--smtp-timeout MS', 'SMTP connect/reply timeout (default 10000)'],
  ['--helo NAME / --mail-from ADDR', 'EHLO name and MAIL FROM address of the mailbox check'],
  ['--smtp-allow-private-hosts', 'allow MX hosts on private/loopback addresses (local testing only)'],
  ['--city-db, --country-db, --asn-db, --isp-db, --anonymous-db, --connection-type-db PATH', 'MaxMind-schema MMDB files (defaults: bundled open data)'],
  ['--rdap-bootstrap-url URL, --rdap-timeout MS', 'RDAP bootstrap file and timeout'],
  ['--no-rdap', 'do not ask RDAP (domain age unknown; email domain_age_days null)'],
  ['--bypass-cache', 'skip the result cache'],
  ['--compact', 'one-line JSON (default when reading stdin)'],
  ['--concurrency N', 'lookups at once when reading stdin (default 8)'],
]

class UsageError extends Error {}

function int(flag: string, v: unknown): number | undefined {
  if (v === undefined) return undefined
  const n = Number(v)
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`--${flag} must be a whole number (got ${String(v)})`)
  return n
}

/** Prints a riskcheck warning (broken resolver, blocked port 25) on stderr, once each. */
export function stderrWarning(io: Pick<CliIO, 'stderr'>): (w: RiskcheckWarning) => void {
  return (w) => io.stderr.write(`riskcheck: warning: ${w.message}\n`)
}

/** Builds riskcheck options from parsed global flags. */
export function optionsFromFlags(values: Record<string, unknown>): RiskcheckOptions {
  const o: RiskcheckOptions = {}
  if (values.mode !== undefined) o.mode = values.mode as 'live' | 'test'
  if (values.offline) o.offline = true
  const dnsServers = values['dns-server'] as string[] | undefined
  const dnsTimeout = int('dns-timeout', values['dns-timeout'])
  if (dnsServers || dnsTimeout !== undefined) o.dns = { ...(dnsServers ? { servers: dnsServers } : {}), ...(dnsTimeout !== undefined ? { timeoutMs: dnsTimeout } : {}) }
  const smtpPort = int('smtp-port', values['smtp-port'])
  const smtpTimeout = int('smtp-timeout', values['smtp-timeout'])
  if (smtpPort !== undefined || smtpTimeout !== undefined || values.helo || values['mail-from'] || values['smtp-allow-private-hosts'])
    o.smtp = {
      ...(values['smtp-allow-private-hosts'] ? { allowPrivateHosts: true } : {}),
      ...(smtpPort !== undefined ? { port: smtpPort } : {}),
      ...(smtpTimeout !== undefined ? { timeoutMs: smtpTimeout } : {}),
      ...(values.helo ? { heloName: values.helo as string } : {}),
      ...(values['mail-from'] ? { mailFrom: values['mail-from'] as string } : {}),
    }
  const ipMap = { 'city-db': 'cityDb', 'country-db': 'countryDb', 'asn-db': 'asnDb', 'isp-db': 'ispDb', 'anonymous-db': 'anonymousDb', 'connection-type-db': 'connectionTypeDb' } as const
  for (const [flag, key] of Object.entries(ipMap)) if (values[flag]) (o.ip ??= {})[key] = values[flag] as string
  const rdapTimeout = int('rdap-timeout', values['rdap-timeout'])
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

function lookupByCommand(command: string): SingleLookupType | undefined {
  return (Object.keys(CHECKS) as SingleLookupType[]).find((k) => CHECKS[k].cli.command === command)
}

function flagOptions(flags: readonly CliFlag[] | undefined): Options {
  const out: Options = {}
  for (const f of flags ?? []) out[f.name] = { type: f.type }
  return out
}

function lookupOptions(flags: readonly CliFlag[] | undefined, values: Record<string, unknown>): Record<string, unknown> {
  const o: Record<string, unknown> = {}
  for (const f of flags ?? []) if (values[f.name] !== undefined) o[f.option] = f.value !== undefined ? f.value : values[f.name]
  if (values['bypass-cache']) o.bypassCache = true
  return o
}

/** The `--help` text. */
export function helpText(): string {
  const lines = [
    `riskcheck ${VERSION} — verdicts, risk scores and recommended actions for emails, phones, IPs and domains`,
    '',
    'Usage:',
    '  riskcheck <lookup> <input> [flags]      check one input, print the result as JSON',
    '  riskcheck <lookup> [flags] < file       check one input per line from stdin, print JSON lines',
    '  riskcheck check --email E --ip I --phone P [--country CC] [--context signup|lead|checkout]',
    '',
    'Lookups:',
  ]
  for (const def of Object.values(CHECKS)) {
    lines.push(`  ${def.cli.command.padEnd(12)} ${def.cli.summary}`)
    for (const f of def.cli.flags ?? []) lines.push(`  ${''.padEnd(12)}   --${f.name}${f.type === 'string' ? ' VALUE' : ''}  ${f.description}`)
  }
  lines.push(`  ${'check'.padEnd(12)} email, IP and phone together, with cross-signals and one recommendation`)
  if (COMMANDS.length > 0) {
    lines.push('', 'Commands:')
    for (const c of COMMANDS) lines.push(`  ${c.name.padEnd(12)} ${c.summary}`)
  }
  lines.push('', 'Flags of every lookup:')
  for (const [f, d] of GLOBAL_HELP) lines.push(`  ${f}\n      ${d}`)
  lines.push('', 'Exit codes: 0 done · 1 a lookup failed · 2 an input was rejected (error JSON printed) · 64 bad usage')
  return lines.join('\n') + '\n'
}

function errorJson(e: unknown, input?: unknown): Record<string, unknown> {
  const error = isRiskcheckError(e)
    ? { code: e.code, message: e.message }
    : { code: 'INTERNAL_ERROR', message: e instanceof Error ? e.message : String(e) }
  return input === undefined ? { error } : { input, error }
}

async function runLines(
  io: CliIO,
  run: (input: string) => Promise<unknown>,
  concurrency: number,
): Promise<number> {
  const rl = createInterface({ input: io.stdin, crlfDelay: Infinity })
  // Results are written in input order; at most `concurrency` lookups are in flight.
  const pending: Array<Promise<string>> = []
  let failures = 0
  const flush = async (all: boolean) => {
    while (pending.length > (all ? 0 : concurrency - 1)) io.stdout.write((await pending.shift()!) + '\n')
  }
  for await (const line of rl) {
    const input = line.trim()
    if (input === '') continue
    pending.push(
      run(input).then(
        (r) => JSON.stringify(r),
        (e) => {
          failures++
          return JSON.stringify(errorJson(e, input))
        },
      ),
    )
    await flush(false)
  }
  await flush(true)
  return failures > 0 ? 1 : 0
}

/**
 * Runs the CLI with `argv` (without `node` and the script) and returns the exit code.
 *
 * @example await runCli(['email', 'jane@example.org', '--mode', 'test'], process)
 */
export async function runCli(argv: string[], io: CliIO): Promise<number> {
  const [command, ...rest] = argv
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    io.stdout.write(helpText())
    return command === undefined ? 64 : 0
  }
  if (command === '--version' || command === '-v') {
    io.stdout.write(`${VERSION}\n`)
    return 0
  }
  const extra = COMMANDS.find((c) => c.name === command)
  if (extra) return extra.run(rest, io)

  const lookupType = lookupByCommand(command)
  if (!lookupType && command !== 'check') {
    io.stderr.write(`riskcheck: unknown command "${command}" (see riskcheck --help)\n`)
    return 64
  }
  const def = lookupType ? CHECKS[lookupType] : undefined
  const checkFlags: Options = {
    email: { type: 'string' },
    ip: { type: 'string' },
    phone: { type: 'string' },
    country: { type: 'string' },
    context: { type: 'string' },
    'no-smtp': { type: 'boolean' },
  }
  let parsed: ReturnType<typeof parseArgs>
  let rc: Riskcheck | undefined
  try {
    parsed = parseArgs({
      args: rest,
      options: { ...GLOBAL_FLAGS, ...(def ? flagOptions(def.cli.flags) : checkFlags) },
      allowPositionals: true,
      strict: true,
    })
    if (parsed.values.help) {
      io.stdout.write(helpText())
      return 0
    }
    if (parsed.positionals.length > 1) throw new UsageError(`${command} takes one input (got ${parsed.positionals.length}); quote it or use stdin`)
    rc = createRiskcheck({ ...optionsFromFlags(parsed.values), onWarning: stderrWarning(io) })
  } catch (e) {
    io.stderr.write(`riskcheck: ${(e as Error).message}\n`)
    return 64
  }
  const values = parsed.values as Record<string, unknown>
  const pretty = !values.compact
  try {
    if (!def) {
      const result = await rc.check({
        email: (values.email as string | undefined) ?? null,
        ip: (values.ip as string | undefined) ?? null,
        phone: (values.phone as string | undefined) ?? null,
        country: (values.country as string | undefined) ?? null,
        context: (values.context as 'signup' | undefined) ?? null,
        bypassCache: Boolean(values['bypass-cache']),
        ...(values['no-smtp'] ? { smtp: false } : {}),
      })
      io.stdout.write(JSON.stringify(result, null, pretty ? 2 : undefined) + '\n')
      return 0
    }
    const opts = lookupOptions(def.cli.flags, values)
    const input = parsed.positionals[0]
    if (input !== undefined) {
      const result = await rc.lookup(lookupType!, input, opts as never)
      io.stdout.write(JSON.stringify(result, null, pretty ? 2 : undefined) + '\n')
      return 0
    }
    const concurrency = int('concurrency', values.concurrency) ?? 8
    return await runLines(io, (line) => rc!.lookup(lookupType!, line, opts as never), Math.max(1, concurrency))
  } catch (e) {
    io.stdout.write(JSON.stringify(errorJson(e), null, pretty ? 2 : undefined) + '\n')
    io.stderr.write(`riskcheck: ${(e as Error).message}\n`)
    return isRiskcheckError(e) ? 2 : 1
  } finally {
    await rc.close()
  }
}
