/**
 * SIGTERM drains `riskcheck serve` (a real child process): a request in flight when the signal arrives still gets
 * its 200, new connections are refused at once, and the process exits 0. The slow request is a domain-age lookup
 * whose RDAP answer a loopback server holds until the test releases it (no timing involved).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server, type ServerResponse } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDnsServer, type FakeDnsServer } from './fake-internet/dns-server.js'
import { issueApiKey } from '../src/accounts/keys.js'
import { createSqliteStore } from '../src/server/store/sqlite/store.js'
import { nodeArgs } from './child-process.js'

let dir: string
let rdap: Server
let rdapUrl: string
let dns: FakeDnsServer
const held: ServerResponse[] = []
let heldArrived: () => void = () => undefined
let arrived = new Promise<void>((resolve) => (heldArrived = resolve))
const expectHeld = () => (arrived = new Promise<void>((resolve) => (heldArrived = resolve)))

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'riskcheck-drain-'))
  dns = await startDnsServer({ zones: {}, everyName: 'nxdomain' })
  rdap = createServer((req, res) => {
    if (req.url === '/dns.json') {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ version: '1.0', publication: '2026-01-01T00:00:00Z', description: 'test', services: [[['test'], [`${rdapUrl}/rdap/`]]] }))
      return
    }
    held.push(res)
    heldArrived()
  })
  await new Promise<void>((resolve) => rdap.listen(0, '127.0.0.1', resolve))
  rdapUrl = `http://127.0.0.1:${(rdap.address() as AddressInfo).port}`
})
afterAll(async () => {
  for (const r of held) r.destroy()
  rdap.closeAllConnections()
  await new Promise((resolve) => rdap.close(resolve))
  await dns.close()
  rmSync(dir, { recursive: true, force: true })
})

function startServe(args: string[]): { child: ChildProcess; url: Promise<string>; exit: Promise<number | null>; err: () => string } {
  const child = spawn(process.execPath, [...nodeArgs('src/cli/bin.ts'), 'serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stderr!.on('data', (d) => (err += d))
  const url = new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d
      const line = out.split('\n').find((l) => l.startsWith('{'))
      if (line) resolve((JSON.parse(line) as { url: string }).url)
    })
    child.on('close', () => reject(new Error(`serve exited before listening: ${err}`)))
  })
  url.catch(() => undefined)
  const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
  return { child, url, exit, err: () => err }
}

/** Whether a TCP connection to `url` is refused. */
function refused(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve) => {
    const s = connect(Number(port), hostname)
    s.once('connect', () => {
      s.destroy()
      resolve(false)
    })
    s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNREFUSED'))
  })
}

/** A database file with an org and a live key. */
async function newDatabase(name: string): Promise<{ db: string; key: string }> {
  const db = join(dir, `${name}.sqlite`)
  const store = createSqliteStore(db)
  const now = Date.now()
  const org = await store.createOrg({ name: 'Drain', planId: 'starter' }, now)
  const key = (await issueApiKey(store, { orgId: org.id, name: 'drain' }, now)).secret
  await store.close()
  return { db, key }
}

describe('serve drains on SIGTERM', () => {
  it('the in-flight request completes with 200, new connections are refused, exit code 0', { timeout: 60_000 }, async () => {
    const { db, key } = await newDatabase('a')
    expectHeld()
    const s = startServe(['--port', '0', '--db', db, '--json', '--log-level', 'silent', '--dns-server', dns.address, '--rdap-bootstrap-url', `${rdapUrl}/dns.json`, '--rdap-timeout', '60000', '--drain-timeout', '30s'])
    const url = await s.url
    const inflight = fetch(`${url}/v1/domain/age`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ domain: 'held.test' }),
    })
    await arrived // the lookup is waiting on its RDAP answer: the request is in flight
    s.child.kill('SIGTERM')
    // the listening socket closes: poll (by count, not time) until a new connection is refused
    let isRefused = false
    for (let i = 0; i < 200 && !isRefused; i++) {
      isRefused = await refused(url)
      if (!isRefused) await new Promise((r) => setImmediate(r))
    }
    expect(isRefused).toBe(true)
    expect(s.child.exitCode).toBeNull() // still draining
    for (const r of held) {
      r.writeHead(404, { 'content-type': 'application/rdap+json' })
      r.end(JSON.stringify({ errorCode: 404, title: 'Not Found' }))
    }
    const res = await inflight
    expect(res.status).toBe(200)
    const body = (await res.json()) as { success: boolean; data: { request: { type: string } } }
    expect(body.success).toBe(true)
    expect(await s.exit).toBe(0)
  })

  it('past --drain-timeout the request is cut off and the exit code is 1', { timeout: 60_000 }, async () => {
    const { db, key } = await newDatabase('b')
    expectHeld()
    const s = startServe(['--port', '0', '--db', db, '--json', '--log-level', 'silent', '--dns-server', dns.address, '--rdap-bootstrap-url', `${rdapUrl}/dns.json`, '--rdap-timeout', '60000', '--drain-timeout', '1s'])
    const url = await s.url
    const inflight = fetch(`${url}/v1/domain/age`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ domain: 'never.test' }),
    }).then(
      (r) => r.status,
      () => 'cut',
    )
    await arrived
    s.child.kill('SIGINT')
    expect(await s.exit).toBe(1)
    expect(await inflight).toBe('cut')
    expect(s.err()).toMatch(/drain time \(1000 ms\) ran out/)
  })
})
