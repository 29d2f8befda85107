/**
 * What every CLI command shares: the IO it is given, the command shape, usage errors and exit codes, error messages,
 * and the lookup flags that build the riskcheck options. The CLI core (./main.ts) and each command module import
 * this module; none imports another command or the core, so there is no import loop.
 */
import { readFile } from 'node:fs/promises'
import type { ParseArgsConfig } from 'node:util'
import { parse as parseYaml } from 'yaml'
import { isRiskcheckError } from '../errors.js'
import { instantOfText } from '../instant.js'
import { missingServerPackages, serverPackagesMessage } from '../server/packages.js'
import type { ListDefinition } from '../lists/types.js'
import { OutcomesFileError, readOutcomesFile, type OutcomeEntry } from '../outcomes/file.js'
import type { RiskcheckOptions, RiskcheckWarning } from '../options.js'
import { formatPolicyIssues, loadPolicyFile, PolicyFileError, type PolicyFile } from '../scoring/policy-file.js'
import { flagDefaultLabel, flaggedSettings, settingProblem, type Setting } from '../settings.js'

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
export const EXIT = { ok: 0, failed: 1, rejected: 2, usage: 64, unavailable: 69, locked: 75, interrupted: 130 } as const

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

/** Lookup flags of the CLI itself (not riskcheck settings), with their help. */
const CLI_ONLY_FLAGS: Array<{ flag: string; def: Options[string]; help: [string, string] }> = [
  { flag: 'bypass-cache', def: { type: 'boolean' }, help: ['--bypass-cache', 'skip the result cache'] },
  {
    flag: 'policy',
    def: { type: 'string' },
    help: ['--policy FILE', 'scoring policy file (JSON or YAML: weights, thresholds, actions, rules, contexts; see riskcheck policy)'],
  },
  { flag: 'compact', def: { type: 'boolean' }, help: ['--compact', 'one-line JSON (default when reading stdin)'] },
  { flag: 'concurrency', def: { type: 'string' }, help: ['--concurrency N', 'lookups at once when reading stdin (default 8)'] },
]

/**
 * `--lists FILE`: the lookups' and bulk's own (not the service's: its lists belong to each org), so it is not among
 * {@link GLOBAL_FLAGS}, which `riskcheck serve` and `worker` take too.
 */
export const LISTS_FLAG: Options = { lists: { type: 'string' } }
/** `--outcomes FILE`: the lookups' and bulk's own, like `--lists` (the service's outcomes are recorded per org). */
export const OUTCOMES_FLAG: Options = { outcomes: { type: 'string' } }
export const LISTS_HELP: [string, string] = [
  '--lists FILE',
  'allow/block lists (JSON or YAML: a list of { name, kind, itemType, items }; see docs/lists-and-velocity.md)',
]

export const OUTCOMES_HELP: [string, string] = [
  '--outcomes FILE',
  'outcomes of earlier answers (.csv with a header, or .jsonl: input, type, outcome, note, at; see docs/outcomes.md)',
]

/** The entries of `--outcomes FILE` (undefined without the flag); a file that cannot be read or parsed is a usage error. */
export async function outcomesFromFlags(values: Record<string, unknown>): Promise<OutcomeEntry[] | undefined> {
  const path = values.outcomes
  if (path === undefined) return undefined
  try {
    return await readOutcomesFile(String(path))
  } catch (e) {
    throw new UsageError(`--outcomes: ${e instanceof OutcomesFileError ? `${String(path)}: ` : `cannot read ${String(path)}: `}${messageOf(e)}`)
  }
}

/** The parseArgs shape of a setting's flag. */
function flagDefinition(s: Setting): Options[string] {
  if (s.kind === 'boolean') return { type: 'boolean' }
  return s.kind === 'list' ? { type: 'string', multiple: true } : { type: 'string' }
}

/**
 * Flags every lookup accepts: one per riskcheck setting that has a flag (src/settings.ts), and the CLI's own.
 */
export const GLOBAL_FLAGS: Options = {
  ...Object.fromEntries(flaggedSettings().map((s) => [s.flag!, flagDefinition(s)])),
  ...Object.fromEntries(CLI_ONLY_FLAGS.map((f) => [f.flag, f.def])),
  help: { type: 'boolean', short: 'h' },
}

/** Help lines of {@link GLOBAL_FLAGS}: each setting's description and default, from src/settings.ts. */
export const GLOBAL_HELP: Array<[string, string]> = [
  ...flaggedSettings().map((s): [string, string] => {
    const name = `--${s.flag}${s.flagValue ? ` ${s.flagValue}` : ''}${s.kind === 'list' ? ' (repeatable)' : ''}`
    const plain = (text: string) => text.replace(/`/g, '')
    const dflt = s.kind === 'boolean' ? '' : ` (default: ${plain(flagDefaultLabel(s))})`
    return [name, `${plain(s.flagDescription ?? s.description)}${dflt}`]
  }),
  ...CLI_ONLY_FLAGS.map((f) => f.help),
]

/** Sets `value` at a dotted option path: `dns.timeoutMs` → `o.dns.timeoutMs`. */
function setPath(o: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.')
  let at = o
  for (const k of keys.slice(0, -1)) at = (at[k] ??= {}) as Record<string, unknown>
  at[keys[keys.length - 1]!] = value
}

/** The option value of a setting's flag, checked as the library would; a UsageError naming the flag otherwise. */
function flagValue(s: Setting, raw: unknown): unknown {
  const name = `--${s.flag}`
  if (s.kind === 'boolean') return s.flagSets ?? true
  if (s.path === 'now') {
    // The strict rule of src/instant.ts: `new Date(text)` took `1`, `Mar 3 2026`, and read an offset-less time locally.
    const ms = instantOfText(String(raw).trim())
    if (ms === null) {
      throw new UsageError(`${name} must be an ISO 8601 date (2026-01-31) or a date-time with Z or an offset (2026-01-31T12:00:00Z) (got ${JSON.stringify(String(raw).slice(0, 80))})`)
    }
    return () => new Date(ms)
  }
  const value = s.kind === 'integer' ? wholeNumber(s.flag!, raw, s.min ?? 0) : raw
  const fail = (why: string, got: unknown): never => {
    throw new UsageError(`${name} ${why} (got ${JSON.stringify(String(got).slice(0, 80))})`)
  }
  const problem = settingProblem(s, value)
  if (problem) fail(problem, raw)
  for (const item of s.kind === 'list' ? (value as string[]) : s.kind === 'string' ? [value as string] : []) {
    const why = s.item ? s.item(item) : item === '' ? 'must not be empty' : null
    if (why) fail(why, item)
  }
  return value
}

/**
 * Builds riskcheck options from parsed global flags, each checked as `createRiskcheck` would check its setting (a
 * UsageError naming the flag otherwise); `env` supplies `RISKCHECK_DATA_DIR` when `--data-dir` is not given.
 */
export function optionsFromFlags(values: Record<string, unknown>, env: Record<string, string | undefined> = {}): RiskcheckOptions {
  const o: Record<string, unknown> = {}
  const given = { ...values }
  if (given['data-dir'] === undefined && (env['RISKCHECK_DATA_DIR'] ?? '').trim() !== '') given['data-dir'] = env['RISKCHECK_DATA_DIR']
  for (const s of flaggedSettings()) {
    const raw = given[s.flag!]
    if (raw === undefined || raw === false) continue
    setPath(o, s.path, flagValue(s, raw))
  }
  return o as RiskcheckOptions
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

/**
 * The list definitions of `--lists FILE` (JSON or YAML: an array of lists); undefined without the flag. A file that
 * cannot be read or parsed is a UsageError; the lists themselves are checked by `createRiskcheck` (a ListsError
 * naming each unusable value).
 */
export async function listsFromFlags(values: Record<string, unknown>): Promise<ListDefinition[] | undefined> {
  const path = values.lists
  if (path === undefined) return undefined
  let text: string
  try {
    text = await readFile(String(path), 'utf8')
  } catch (e) {
    throw new UsageError(`--lists: cannot read ${String(path)}: ${messageOf(e)}`)
  }
  let doc: unknown
  try {
    doc = parseYaml(text)
  } catch (e) {
    throw new UsageError(`--lists: ${String(path)} is neither JSON nor YAML: ${messageOf(e)}`)
  }
  if (!Array.isArray(doc)) throw new UsageError(`--lists: ${String(path)} must hold a list of lists ({ name, kind, itemType, items })`)
  return doc as ListDefinition[]
}

/**
 * Whether the HTTP service's packages (optional peer dependencies) are installed; if not, says which are missing and
 * the command that installs them, for `what` (e.g. `riskcheck serve`).
 */
export function haveServerPackages(what: string, io: CliIO): boolean {
  const missing = missingServerPackages()
  if (missing.length > 0) io.stderr.write(`riskcheck: ${serverPackagesMessage(what, missing)}`)
  return missing.length === 0
}
