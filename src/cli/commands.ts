/**
 * Commands of the CLI beyond the lookups (bulk, serve, admin …). Each is a name, a one-line summary and a runner;
 * the CLI core dispatches to them without knowing what they do. A command module is loaded only when its command
 * runs, so `riskcheck email …` never loads the HTTP server or SQLite. The commands of the service (serve, worker,
 * admin) first check that its packages are installed (optional peer dependencies, ../server/packages.ts) and
 * otherwise print the command that installs them (exit 1); their --help works without them.
 */
import { EXIT, haveServerPackages, type CliCommand } from './shared.js'

export type { CliCommand } from './shared.js'

const lazy = (name: string, summary: string, load: () => Promise<CliCommand>, service = false): CliCommand => ({
  name,
  summary,
  run: async (args, io) => {
    if (service && !args.includes('--help') && !args.includes('-h') && !haveServerPackages(`riskcheck ${name}`, io)) return EXIT.failed
    return (await load()).run(args, io)
  },
})

/** The registered commands, in help order. */
export const COMMANDS: CliCommand[] = [
  lazy('bulk', 'check a file of inputs of one type (progress bar; CSV or JSON lines out; Ctrl-C keeps what is done)', async () => (await import('./bulk-command.js')).bulkCommand),
  lazy('serve', 'run the HTTP API (keys, credits, rate limits) on SQLite, or on PostgreSQL + Redis with many instances', async () => (await import('./serve-command.js')).serveCommand, true),
  lazy('worker', 'run only the workers (bulk jobs, webhook deliveries) of a PostgreSQL + Redis deployment', async () => (await import('./worker-command.js')).workerCommand, true),
  lazy('policy', 'policy files: check FILE (validate) · test --policy FILE --results RESULTS (backtest stored answers offline) · schema', async () => (await import('./policy-command.js')).policyCommand),
  lazy('admin', 'operator commands: orgs, keys, credits, plans (against the server store)', async () => (await import('./admin-command.js')).adminCommand, true),
  lazy('data', 'keep the open data fresh: data update | status | rollback | sources [--data-dir DIR]', async () => (await import('./data-command.js')).dataCommand),
]
