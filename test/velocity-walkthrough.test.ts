/**
 * The worked example of docs/lists-and-velocity.md ("Worked example: a sign-up burst") runs as written: its policy
 * block saved as burst-policy.yaml and its sh block run by bash in a temporary directory — `npx riskcheck` is this
 * checkout's bin (built dist), port 8080 a free one — and what the block's comments say it prints is what it prints.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const doc = readFileSync(join(ROOT, 'docs/lists-and-velocity.md'), 'utf8')
const section = doc.split('\n## Worked example: a sign-up burst\n')[1]!.split('\n## ')[0]!
const fenced = (lang: string) => {
  const m = new RegExp('```' + lang + '\\n([\\s\\S]*?)\\n```').exec(section)
  if (!m) throw new Error(`no ${lang} block in the worked example`)
  return m[1]!
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo
      s.close(() => resolve(port))
    })
  })
}

describe('docs/lists-and-velocity.md worked example', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rc-velocity-walk-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  // a shell script of a server and several CLI runs, each a process of its own: more than the default 20 s under load
  it('runs as written: the burst approved, the backtest blocks the 4th to 6th, the applied policy blocks the 7th', { timeout: 90_000 }, async () => {
    writeFileSync(join(dir, 'burst-policy.yaml'), fenced('yaml') + '\n')
    const script = fenced('sh')
    expect(script).toContain('npx riskcheck serve --db demo.sqlite --offline --port 8080')
    const port = String(await freePort())
    // `npx riskcheck` → this checkout; the server is stopped by the script's own last line, or on exit when it failed
    const prelude = [
      'set -euo pipefail',
      `npx() { if [ "$1" = riskcheck ]; then shift; node ${JSON.stringify(join(ROOT, 'bin/riskcheck.js'))} "$@"; else command npx "$@"; fi; }`,
      "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT",
    ].join('\n')
    const out = await new Promise<string>((resolve, reject) => {
      execFile('bash', ['-c', `${prelude}\n${script.replaceAll('8080', port)}`], { cwd: dir, encoding: 'utf8', timeout: 120_000, env: { ...process.env, RISKCHECK_LOG_LEVEL: 'warn' } }, (err, stdout, stderr) =>
        err ? reject(new Error(`${err.message}\n${stdout}\n${stderr}`)) : resolve(stdout),
      )
    })
    const lines = out.split('\n')
    // what the comments state
    expect(lines.filter((l) => l.startsWith('[')).slice(0, 6)).toEqual([1, 2, 3, 4, 5, 6].map((n) => `[${n},"approve"]`))
    expect(script).toContain('# [1,"approve"] … [6,"approve"]')
    expect(out).toContain('Changed: 3 of 6 (50.0%)')
    const changed = lines.filter((l) => /approve 0\s+block \d+\s+network_burst_blocks/.test(l)).map((l) => l.trim().split(' ')[0])
    expect(changed).toEqual(['user4@acme-corp.com', 'user5@acme-corp.com', 'user6@acme-corp.com'])
    expect(out).toMatch(/^Applied: org_\w+ now uses policy pol_[0-9a-f]{16} \(was the service policy\), from its next request\.$/m)
    const last = '[7,"block","Block: a burst of sign-ups from one network."]'
    expect(script).toContain(`# ${last}`)
    expect(lines.filter((l) => l.startsWith('[')).at(-1)).toBe(last)
  })
})
