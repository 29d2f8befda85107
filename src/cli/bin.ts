/** Entry point of the `riskcheck` binary. */
import { runCli } from './main.js'

runCli(process.argv.slice(2), process).then(
  (code) => {
    process.exitCode = code
  },
  (e: unknown) => {
    process.stderr.write(`riskcheck: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`)
    process.exitCode = 1
  },
)
