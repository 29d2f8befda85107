// The `prepare` script: builds dist/ with tsup.
//
// npm runs `prepare` on `npm install` / `npm ci` in a checkout (a build is needed), and also every time `npx
// riskcheck …` runs inside the checkout for the first time: npx links the project into its own cache and prepares it
// (npm_command is then `exec`). That second build is skipped when dist/ is already newer than every source file, so
// the first `npx riskcheck` answers in about a second instead of rebuilding silently for a minute; when src/ changed
// since the build, it rebuilds and says so.
import { spawnSync } from 'node:child_process'
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
if (process.env.npm_command === 'exec' && existsSync(built)) {
  const sources = Math.max(newest(join(root, 'src')), statSync(join(root, 'package.json')).mtimeMs)
  if (statSync(built).mtimeMs >= sources) process.exit(0)
  process.stderr.write('riskcheck: src/ changed since the last build; rebuilding dist/ (about a minute)…\n')
}

const tsup = join(dirname(createRequire(import.meta.url).resolve('tsup/package.json')), 'dist', 'cli-default.js')
const r = spawnSync(process.execPath, [tsup, ...process.argv.slice(2)], { cwd: root, stdio: 'inherit' })
process.exit(r.status ?? 1)
