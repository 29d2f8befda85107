/**
 * `riskcheck serve` as a process, started the way the README says (`npx riskcheck serve …`, and the binary itself):
 * a SIGTERM to the process that was started stops the server — even through npx, whose shell dies of the signal
 * without passing it on — and a SIGTERM sent the moment the address is printed is not missed.
 *
 * Needs dist/ (built by `npm install` and by `npm test`). npx runs offline and without update checks: nothing here
 * leaves the machine.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { nodeArgs } from './child-process.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
let dir: string

beforeAll(() => {
  expect(existsSync(join(ROOT, 'dist', 'cli.js')), 'dist/ is built by `npm install` and `npm test`').toBe(true)
  dir = mkdtempSync(join(tmpdir(), 'riskcheck-serve-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Starts `command args` in the checkout; resolves with the process and the URL it printed. */
function start(command: string, args: string[]): Promise<{ child: ChildProcess; url: string; exited: Promise<{ code: number | null; signal: string | null }> }> {
  const child = spawn(command, args, {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, npm_config_offline: 'true', npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' },
  })
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  return new Promise((resolve, reject) => {
    let out = ''
    let err = ''
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()))
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      const m = /"url":"([^"]+)"/.exec(out)
      if (m) resolve({ child, url: m[1]!, exited })
    })
    void exited.then(({ code }) => reject(new Error(`exited (${code}) before listening: ${out}${err}`)))
  })
}

/** Resolves once nothing answers at `url` any more (the test's own timeout bounds the wait). */
async function untilClosed(url: string): Promise<void> {
  for (;;) {
    try {
      await fetch(`${url}/v1/pricing`)
    } catch {
      return
    }
    await new Promise((r) => setTimeout(r, 100))
  }
}

describe('riskcheck serve as a process', () => {
  it('a SIGTERM to `npx riskcheck serve` stops the server: no orphan keeps the port', async () => {
    const { child, url } = await start('npx', ['riskcheck', 'serve', '--port', '0', '--db', join(dir, 'npx.sqlite'), '--json', '--log-level', 'silent'])
    expect((await fetch(`${url}/v1/pricing`)).status).toBe(200)
    child.kill('SIGTERM')
    await untilClosed(url)
    await expect(fetch(`${url}/v1/pricing`)).rejects.toThrow()
  }, 120_000)

  it('the binary shuts down cleanly (exit 0) on a SIGTERM sent as soon as it prints its address', async () => {
    const { child, url, exited } = await start(process.execPath, ['bin/riskcheck.js', 'serve', '--port', '0', '--db', join(dir, 'bin.sqlite'), '--json', '--log-level', 'silent'])
    child.kill('SIGTERM')
    expect(await exited).toEqual({ code: 0, signal: null })
    await expect(fetch(`${url}/v1/pricing`)).rejects.toThrow()
  }, 60_000)

  it('a SIGTERM raised the very instant the address is printed is not missed (signals are watched from the start)', async () => {
    const { url, exited } = await start(process.execPath, nodeArgs('test/fixtures/serve/signal-at-listening.ts'))
    expect(await exited).toEqual({ code: 0, signal: null })
    await expect(fetch(`${url}/v1/pricing`)).rejects.toThrow()
  }, 60_000)
})
