import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createHash } from 'node:crypto'
import { gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { download, DownloadError } from './download.js'

let server: Server
let base: string
let tmp: string
let hits = new Map<string, number>()
const body = Buffer.from('192.0.2.1\n'.repeat(1000))

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'riskcheck-dl-'))
  server = createServer((req, res) => {
    const path = req.url ?? '/'
    hits.set(path, (hits.get(path) ?? 0) + 1)
    if (path === '/plain') return void res.writeHead(200, { 'content-length': String(body.length) }).end(body)
    if (path === '/gz') {
      const gz = gzipSync(body)
      return void res.writeHead(200, { 'content-length': String(gz.length) }).end(gz)
    }
    if (path === '/missing') return void res.writeHead(404).end('no')
    if (path === '/flaky') {
      if ((hits.get(path) ?? 0) < 3) return void res.writeHead(503).end('busy')
      return void res.writeHead(200).end(body)
    }
    if (path === '/huge') return void res.writeHead(200, { 'content-length': '999999999' }).end()
    if (path === '/chunked-huge') {
      res.writeHead(200)
      for (let i = 0; i < 64; i++) res.write(Buffer.alloc(1024, 1))
      return void res.end()
    }
    if (path === '/cut') {
      res.writeHead(200, { 'content-length': String(body.length) })
      return void res.write(body.subarray(0, 100), () => res.socket?.destroy())
    }
    if (path === '/silent') {
      res.writeHead(200, { 'content-length': '10' })
      return void res.write('12345') // then nothing: the idle timeout must fire
    }
    res.writeHead(500).end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise<void>((r) => server.close(() => r()))
  rmSync(tmp, { recursive: true, force: true })
})

const opts = { maxBytes: 1_000_000, sleep: async () => {} }
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex')
const leftovers = () => readdirSync(tmp).filter((f) => f.endsWith('.download'))

describe('download', () => {
  it('streams to a file with size and SHA-256, reporting progress', async () => {
    const seen: number[] = []
    const d = await download(`${base}/plain`, join(tmp, 'a.txt'), { ...opts, onProgress: (r) => seen.push(r) })
    expect(d).toMatchObject({ bytes: body.length, sha256: sha(body), storedBytes: body.length, gunzipped: false })
    expect(readFileSync(join(tmp, 'a.txt'))).toEqual(body)
    expect(seen.at(-1)).toBe(body.length)
  })

  it('gunzips gzip content; the transfer hash is of the compressed bytes', async () => {
    const d = await download(`${base}/gz`, join(tmp, 'b.txt'), opts)
    expect(d.gunzipped).toBe(true)
    expect(d.sha256).toBe(sha(gzipSync(body)))
    expect(d.storedSha256).toBe(sha(body))
    expect(readFileSync(join(tmp, 'b.txt'))).toEqual(body)
  })

  it('retries 5xx answers, not 404', async () => {
    await download(`${base}/flaky`, join(tmp, 'c.txt'), opts)
    expect(hits.get('/flaky')).toBe(3)
    const e = await download(`${base}/missing`, join(tmp, 'd.txt'), opts).catch((x: unknown) => x)
    expect(e).toBeInstanceOf(DownloadError)
    expect(e).toMatchObject({ status: 404, message: 'HTTP 404' })
    expect(hits.get('/missing')).toBe(1)
  })

  it.each([
    ['/huge', /announces 999999999 bytes, more than the limit/],
    ['/chunked-huge', /larger than the limit of 10000 bytes/],
    ['/cut', /truncated|terminated|aborted|other side closed/i],
  ])('%s is refused and leaves no file', async (path, reason) => {
    const dest = join(tmp, `x${path.slice(1)}`)
    await expect(download(`${base}${path}`, dest, { ...opts, maxBytes: path === '/chunked-huge' ? 10_000 : opts.maxBytes })).rejects.toThrow(reason)
    expect(existsSync(dest)).toBe(false)
    expect(leftovers()).toEqual([])
  })

  it('a stalled transfer hits the idle timeout', async () => {
    await expect(download(`${base}/silent`, join(tmp, 'e.txt'), { ...opts, idleTimeoutMs: 100, tries: 1 })).rejects.toThrow(/no data for 0 s|no data/)
    expect(existsSync(join(tmp, 'e.txt'))).toBe(false)
  })

  it('reads local files and file: URLs; a missing one is an error naming it', async () => {
    const src = join(tmp, 'local.txt')
    writeFileSync(src, body)
    expect((await download(src, join(tmp, 'f.txt'), opts)).sha256).toBe(sha(body))
    expect((await download(`file://${src}`, join(tmp, 'g.txt'), opts)).bytes).toBe(body.length)
    await expect(download(join(tmp, 'nope.txt'), join(tmp, 'h.txt'), opts)).rejects.toThrow(/cannot read .*nope\.txt: ENOENT/)
  })

  it('a corrupt gzip stream is refused', async () => {
    const src = join(tmp, 'bad.gz')
    const gz = gzipSync(body)
    writeFileSync(src, gz.subarray(0, gz.length - 12))
    await expect(download(src, join(tmp, 'i.txt'), opts)).rejects.toThrow(/corrupt gzip data/)
    expect(existsSync(join(tmp, 'i.txt'))).toBe(false)
  })
})
