/** Entry point of the `riskcheck` binary. */
import { runCli } from './main.js'

// The reader of stdout or stderr went away (`riskcheck … | head -1`): stop at once, without a stack trace. Exit 141
// (128 + SIGPIPE) is what the shell reports for `cat`, `grep` or `yes` killed by SIGPIPE there; 0 would claim every
// input was answered, and `set -o pipefail` scripts then treat riskcheck as they treat those tools.
const EXIT_SIGPIPE = 141
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE') throw e
    process.exit(EXIT_SIGPIPE)
  })
}

runCli(process.argv.slice(2), process).then(
  (code) => {
    process.exitCode = code
  },
  (e: unknown) => {
    process.stderr.write(`riskcheck: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`)
    process.exitCode = 1
  },
)
