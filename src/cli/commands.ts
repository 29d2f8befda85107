/**
 * Commands of the CLI beyond the lookups (bulk, serve, admin …). Each is a name, a one-line summary and a runner;
 * the CLI core dispatches to them without knowing what they do.
 */
import type { CliIO } from './main.js'

/** A CLI command. `run` gets the arguments after the command name and returns the exit code. */
export interface CliCommand {
  name: string
  summary: string
  run(args: string[], io: CliIO): Promise<number>
}

/** The registered commands, in help order. */
export const COMMANDS: CliCommand[] = []
