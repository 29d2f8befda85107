// The `prepare` script: builds dist/ with tsup.
//
// npm runs `prepare` on `npm install` / `npm ci` in a checkout (a build is needed), and also every time `npx
// riskcheck …` runs inside the checkout for the first time: npx links the project into its own cache and prepares it
// (npm_command is then `exec`). That second build is skipped when dist/ is already newer than every source file, so
// the first `npx riskcheck` answers in about a second instead of rebuilding silently for a minute; when src/ changed
// since the build, it rebuilds and says so. `npm test`'s pretest runs it the same way. Either build prints one line
// when it succeeds, and all of tsup's output when it fails.
import { spawn } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/** Newest modification time under `dir` (files only). */
function newest(dir) {
  let t = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name)
    t = Math.max(t, entry.isDirectory() ? newest(p) : statSync(p).mtimeMs)
  }
  return t
}

const built = join(root, 'dist', 'cli.js')
// `npm test` (its pretest) builds only when something changed since the last build too: in CI, `npm ci` just built it
const whenStale = process.env.npm_command === 'exec' || process.env.npm_lifecycle_event === 'pretest'
if (whenStale && existsSync(built)) {
  const sources = Math.max(newest(join(root, 'src')), ...['package.json', 'tsup.config.ts'].map((f) => statSync(join(root, f)).mtimeMs))
  if (statSync(built).mtimeMs >= sources) process.exit(0)
  process.stderr.write('riskcheck: src/ changed since the last build; rebuilding dist/ (about a minute)…\n')
}

// tsup lists every file it writes (~300 lines on `npm install`): its output is kept and shown only when the build
// fails, so a good install prints one line and a broken one everything tsup said.
const tsup = join(dirname(createRequire(import.meta.url).resolve('tsup/package.json')), 'dist', 'cli-default.js')
const started = Date.now()
const child = spawn(process.execPath, [tsup, ...process.argv.slice(2)], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
const output = []
child.stdout.on('data', (d) => output.push(d))
child.stderr.on('data', (d) => output.push(d))
child.on('error', (e) => output.push(Buffer.from(`${e.message}\n`)))
child.on('close', (code, signal) => {
  if (code === 0) {
    process.stdout.write(`riskcheck: build done (tsup, ${Math.round((Date.now() - started) / 1000)} s)\n`)
    process.exit(0)
  }
  process.stderr.write(Buffer.concat(output))
  process.stderr.write(`\nriskcheck: the build failed (tsup ${signal ? `killed by ${signal}` : `exit ${code}`}); its output is above\n`)
  process.exit(code || 1)
})
