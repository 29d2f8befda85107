#!/usr/bin/env node
// The riskcheck command: runs the built CLI (npm install builds it through the `prepare` script).
import('../dist/cli.js').catch((e) => {
  process.stderr.write(`riskcheck: cannot start (${e.message}). Run \`npm run build\` first.\n`)
  process.exitCode = 1
})
