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
import { createRiskcheck, type Riskcheck } from '../riskcheck.js'
import { CONTEXTS } from '../schema.js'
import { VERSION } from '../version.js'
import { COMMANDS } from './commands.js'
import { EXIT, exitCodeOf, GLOBAL_FLAGS, GLOBAL_HELP, LISTS_FLAG, LISTS_HELP, listsFromFlags, OUTCOMES_FLAG, OUTCOMES_HELP, outcomesFromFlags, messageOf, optionsFromFlags, policyFromFlags, printError, stderrWarning, UsageError, wholeNumber, type CliIO } from './shared.js'

// Kept importable from here for code written against earlier versions; new commands import ./shared.js.
export { GLOBAL_FLAGS, optionsFromFlags, policyFromFlags, stderrWarning, type CliIO } from './shared.js'

type Options = NonNullable<ParseArgsConfig['options']>

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
    '  riskcheck <command> --help              help of a command (bulk, serve, admin)',
    '  riskcheck --version | -v                print the version',
    '  riskcheck --help | -h                   this text',
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
  for (const [f, d] of [...GLOBAL_HELP, LISTS_HELP, OUTCOMES_HELP]) lines.push(`  ${f}\n      ${d}`)
  lines.push(
    '',
    'Exit codes: 0 every input answered · 1 a lookup failed (with stdin: at least one) · 2 an input was rejected',
    '(with stdin: at least one, none failed; its error JSON is printed in its place) · 64 bad usage',
  )
  return lines.join('\n') + '\n'
}

/** The short usage of one lookup command, printed when it is run without an input on a terminal. */
function lookupUsage(command: string): string {
  return [
    `Usage: riskcheck ${command} <input> [flags]     check one input`,
    `       riskcheck ${command} [flags] < file      one input per line`,
    'See riskcheck --help for the flags.',
    '',
  ].join('\n')
}

function errorJson(e: unknown, input?: unknown): Record<string, unknown> {
  const error = isRiskcheckError(e) ? { code: e.code, message: e.message } : { code: 'INTERNAL_ERROR', message: messageOf(e) }
  return input === undefined ? { error } : { input, error }
}

/** Runs one lookup per stdin line; results in input order. Exit code: the worst outcome (1 failed > 2 rejected > 0). */
async function runLines(io: CliIO, run: (input: string) => Promise<unknown>, concurrency: number): Promise<number> {
  const rl = createInterface({ input: io.stdin, crlfDelay: Infinity })
  // Results are written in input order; at most `concurrency` lookups are in flight.
  const pending: Array<Promise<string>> = []
  let failed = false
  let rejected = false
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
          if (exitCodeOf(e) === EXIT.rejected) rejected = true
          else failed = true
          return JSON.stringify(errorJson(e, input))
        },
      ),
    )
    await flush(false)
  }
  await flush(true)
  return failed ? EXIT.failed : rejected ? EXIT.rejected : EXIT.ok
}

/**
 * `check` takes its inputs as flags only (a positional was silently ignored), and its context from a fixed set: either
 * mistake is bad usage (64), as a bad `--mode` is, not a rejected input (2).
 */
function checkUsage(positionals: string[], values: Record<string, unknown>): void {
  if (positionals.length > 0) {
    throw new UsageError(`check takes its inputs as flags: --email, --ip, --phone (got ${JSON.stringify(positionals[0]!.slice(0, 80))})`)
  }
  const context = values.context
  if (context !== undefined && !(CONTEXTS as readonly unknown[]).includes(context)) {
    throw new UsageError(`--context must be one of ${CONTEXTS.join(', ')} (got ${JSON.stringify(String(context).slice(0, 80))})`)
  }
}

/**
 * Runs the CLI with `argv` (without `node` and the script) and returns the exit code (see {@link EXIT}).
 *
 * @example await runCli(['email', 'jane@example.org', '--mode', 'test'], process)
 */
export async function runCli(argv: string[], io: CliIO): Promise<number> {
  const [command, ...rest] = argv
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    io.stdout.write(helpText())
    return command === undefined ? EXIT.usage : EXIT.ok
  }
  if (command === '--version' || command === '-v') {
    io.stdout.write(`${VERSION}\n`)
    return EXIT.ok
  }
  const extra = COMMANDS.find((c) => c.name === command)
  if (extra) return extra.run(rest, io)

  const lookupType = lookupByCommand(command)
  if (!lookupType && command !== 'check') {
    io.stderr.write(`riskcheck: unknown command "${command}" (see riskcheck --help)\n`)
    return EXIT.usage
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
  let concurrency = 8
  try {
    parsed = parseArgs({
      args: rest,
      options: { ...GLOBAL_FLAGS, ...LISTS_FLAG, ...OUTCOMES_FLAG, ...(def ? flagOptions(def.cli.flags) : checkFlags) },
      allowPositionals: true,
      strict: true,
    })
    if (parsed.values.help) {
      io.stdout.write(helpText())
      return EXIT.ok
    }
    if (!def) checkUsage(parsed.positionals, parsed.values as Record<string, unknown>)
    if (parsed.positionals.length > 1) throw new UsageError(`${command} takes one input (got ${parsed.positionals.length}); quote it or use stdin`)
    if (def && parsed.positionals.length === 0 && io.stdin.isTTY) {
      // Nothing to read: a terminal would wait silently for lines nobody knows to type.
      io.stderr.write(lookupUsage(command))
      return EXIT.usage
    }
    concurrency = Math.max(1, wholeNumber('concurrency', (parsed.values as Record<string, unknown>).concurrency, 1) ?? 8)
    const policy = await policyFromFlags(parsed.values, io)
    if (policy === null) return EXIT.usage
    const lists = await listsFromFlags(parsed.values as Record<string, unknown>)
    const outcomes = await outcomesFromFlags(parsed.values as Record<string, unknown>)
    rc = createRiskcheck({
      ...optionsFromFlags(parsed.values, io.env),
      ...(policy ? { scoring: policy.overrides } : {}),
      ...(lists ? { lists } : {}),
      ...(outcomes ? { outcomes } : {}),
      onWarning: stderrWarning(io),
    })
  } catch (e) {
    printError(io, 'riskcheck', e)
    return EXIT.usage
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
      return EXIT.ok
    }
    const opts = lookupOptions(def.cli.flags, values)
    const input = parsed.positionals[0]
    if (input !== undefined) {
      const result = await rc.lookup(lookupType!, input, opts as never)
      io.stdout.write(JSON.stringify(result, null, pretty ? 2 : undefined) + '\n')
      return EXIT.ok
    }
    return await runLines(io, (line) => rc!.lookup(lookupType!, line, opts as never), concurrency)
  } catch (e) {
    io.stdout.write(JSON.stringify(errorJson(e), null, pretty ? 2 : undefined) + '\n')
    printError(io, 'riskcheck', e)
    return exitCodeOf(e)
  } finally {
    await rc.close()
  }
}
