/**
 * What the real `riskcheck` process says to a newcomer: `serve` names the team dashboard's address as it starts (under
 * --public-url when one is set), and the help of `--now` shows its default in words.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { nodeArgs } from './child-process.js'

let dir: string
const children = new Set<ChildProcess>()

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'riskcheck-startup-'))
})
afterAll(async () => {
  await Promise.all([...children].map(stop))
  rmSync(dir, { recursive: true, force: true })
})

/** Runs `riskcheck args` to its end. */
function run(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, [...nodeArgs('src/cli/bin.ts'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (err += d.toString()))
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, out, err })))
}

/** Starts `riskcheck serve args`; resolves with what it printed up to its dashboard line. */
function serve(args: string[]): Promise<{ child: ChildProcess; out: string }> {
  const child = spawn(process.execPath, [...nodeArgs('src/cli/bin.ts'), 'serve', '--port', '0', '--offline', '--log-level', 'silent', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.add(child)
  let out = ''
  let err = ''
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()))
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      if (/^team dashboard: .*\n/m.test(out)) resolve({ child, out })
    })
    child.on('close', (code) => reject(new Error(`serve exited ${code} before naming its dashboard: ${out}${err}`)))
  })
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const gone = new Promise((resolve) => child.once('close', resolve))
  child.kill('SIGTERM')
  await gone
  children.delete(child)
}

// Each test starts processes of its own (own database file, own port): the tests run side by side.
describe('riskcheck serve names its dashboard', { concurrent: true }, () => {
  it('at the address it listens on, which opens the dashboard', async () => {
    const { child, out } = await serve(['--db', join(dir, 'plain.sqlite')])
    const api = /^riskcheck API listening on (http:\/\/127\.0\.0\.1:\d+) /m.exec(out)![1]!
    const dashboard = /^team dashboard: (\S+)$/m.exec(out)![1]!
    expect(dashboard).toBe(`${api}/dashboard`)
    const page = await fetch(dashboard)
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toMatch(/^text\/html/)
    await stop(child)
  }, 120_000)

  it('under --public-url when it is set (the address people reach it at), and in the --json line', async () => {
    const human = await serve(['--db', join(dir, 'public.sqlite'), '--public-url', 'https://risk.example.com/tools/'])
    expect(human.out).toMatch(/^team dashboard: https:\/\/risk\.example\.com\/tools\/dashboard$/m)
    await stop(human.child)
    const json = spawn(process.execPath, [...nodeArgs('src/cli/bin.ts'), 'serve', '--port', '0', '--offline', '--log-level', 'silent', '--json', '--db', join(dir, 'json.sqlite')], {
      stdio: ['ignore', 'pipe', 'ignore'],
    })
    children.add(json)
    const line = await new Promise<string>((resolve) => {
      let out = ''
      json.stdout!.on('data', (d: Buffer) => {
        out += d.toString()
        if (out.includes('\n')) resolve(out.split('\n')[0]!)
      })
    })
    const printed = JSON.parse(line) as { url: string; dashboard_url: string }
    expect(printed.dashboard_url).toBe(`${printed.url}/dashboard`)
    await stop(json)
  }, 120_000)

  it('at localhost when it listens on every address (0.0.0.0 is not an address a browser opens)', async () => {
    const { child, out } = await serve(['--db', join(dir, 'wild.sqlite'), '--host', '0.0.0.0'])
    const port = /^riskcheck API listening on http:\/\/0\.0\.0\.0:(\d+) /m.exec(out)![1]!
    expect(out).toMatch(new RegExp(`^team dashboard: http://localhost:${port}/dashboard$`, 'm'))
    await stop(child)
  }, 120_000)
})

describe('the help of --now', { concurrent: true }, () => {
  it('shows its default in words, not a date or a function', async () => {
    const [lookup, data] = await Promise.all([run(['--help']), run(['data', '--help'])])
    expect(lookup.code).toBe(0)
    const lines = lookup.out.split('\n')
    const at = lines.findIndex((l) => l.trim().startsWith('--now '))
    expect(lines[at + 1]).toMatch(/\(default: the current time\)$/)
    expect(data.code).toBe(0)
    expect(data.out).toMatch(/--now ISO .*default: the current time/)
    for (const text of [lookup.out, data.out]) expect(text).not.toMatch(/=>|\d{4}-\d\d-\d\dT/)
  }, 120_000)
})
