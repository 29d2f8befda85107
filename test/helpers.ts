/**
 * Test helpers shared by every suite: a hand-built check context (for driving one check without the facade), a fake
 * clock, and (re-exported) the validator of lookup results against the runtime schema.
 */
import { PassThrough } from 'node:stream'
import type { CheckContext } from '../src/checks/types.js'
import type { CliIO } from '../src/cli/main.js'
import { resolveOptions, type RiskcheckOptions } from '../src/options.js'
import { createSources, type SourceSet } from '../src/sources/index.js'
export { assertValidResult, resultErrors, schemaErrors } from './validate.js'
export { fakeClock } from './clock.js'

/** A check context built like the facade builds it, for driving one check directly. Call `close()` after. */
export function createTestContext(options: RiskcheckOptions = {}): CheckContext & { sources: SourceSet; close(): Promise<void> } {
  const resolved = resolveOptions(options)
  const sources = createSources(resolved)
  return {
    now: resolved.now,
    mode: resolved.mode,
    offline: resolved.offline,
    sources,
    options: resolved,
    close: () => sources.close(),
  }
}


/** A CLI I/O over in-memory streams, with what was written to stdout and stderr. */
export function memoryIO(env: Record<string, string | undefined> = {}): CliIO & { out(): string; err(): string } {
  const stdout = new PassThrough()
  const stderr = new PassThrough()
  let out = ''
  let err = ''
  stdout.on('data', (c: Buffer) => (out += c.toString()))
  stderr.on('data', (c: Buffer) => (err += c.toString()))
  return { stdin: new PassThrough(), stdout, stderr, env, out: () => out, err: () => err }
}
