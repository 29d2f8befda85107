/**
 * `docs_url` in error envelopes leads to documentation that exists: docs/api.md carries one anchor per error code,
 * the server serves the same table at GET /docs/errors (its default `docs_url`, at the address it listens on), and an
 * operator can point it elsewhere with `docsUrl` / `serve --docs-url` / `RISKCHECK_DOCS_URL`.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { runServe } from '../src/cli/serve-command.js'
import { errorAnchor, ERROR_CODES } from '../src/errors.js'
import { createServer } from '../src/server/app.js'
import { memoryIO } from './helpers.js'
import { serveInProcess } from './server-helpers.js'

const API_MD = readFileSync(new URL('../docs/api.md', import.meta.url), 'utf8')
const dir = mkdtempSync(join(tmpdir(), 'riskcheck-docs-url-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('docs/api.md', () => {
  it('has one anchor per error code, on that code’s row of the Errors table', () => {
    for (const code of ERROR_CODES) {
      const anchor = `<a id="${errorAnchor(code)}"></a>`
      expect(API_MD.split(anchor).length - 1, code).toBe(1)
      expect(API_MD, code).toContain(`| ${anchor}\`${code}\` |`)
    }
  })
})

describe('docs_url', () => {
  it('points at the server’s own GET /docs/errors where it listens, and that page has the code’s row', async () => {
    const app = createServer({ db: ':memory:', purgeIntervalMs: 0, riskcheck: { offline: true } })
    try {
      await app.listen({ host: '127.0.0.1', port: 0 })
      const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
      const res = await fetch(`${base}/v1/ip`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"ip":"8.8.8.8"}' })
      expect(res.status).toBe(401)
      const body = (await res.json()) as { error: { code: string; docs_url: string } }
      expect(body.error.code).toBe('UNAUTHORIZED')
      expect(body.error.docs_url).toBe(`${base}/docs/errors#unauthorized`)
      expect(body.error.docs_url).not.toMatch(/riskcheck\.dev/)

      const page = await fetch(body.error.docs_url.split('#')[0]!)
      expect(page.status).toBe(200)
      expect(page.headers.get('content-type')).toMatch(/^text\/html/)
      const html = await page.text()
      for (const code of ERROR_CODES) expect(html, code).toContain(`<tr id="${errorAnchor(code)}"><td><code>${code}</code></td>`)
    } finally {
      await app.close()
    }
  })

  it('uses publicUrl, or the operator’s docsUrl with the code’s anchor appended; a bad docsUrl throws at construction', async () => {
    const viaPublic = createServer({ db: ':memory:', purgeIntervalMs: 0, publicUrl: 'https://api.example.com/', riskcheck: { offline: true } })
    const viaDocs = createServer({ db: ':memory:', purgeIntervalMs: 0, docsUrl: 'https://docs.example.com/riskcheck/errors', riskcheck: { offline: true } })
    try {
      const a = await viaPublic.inject({ method: 'GET', url: '/v1/nothing-here' })
      expect(a.json().error.docs_url).toBe('https://api.example.com/docs/errors#not_found')
      const b = await viaDocs.inject({ method: 'GET', url: '/v1/account' })
      expect(b.json().error.docs_url).toBe('https://docs.example.com/riskcheck/errors#unauthorized')
    } finally {
      await viaPublic.close()
      await viaDocs.close()
    }
    for (const bad of ['docs.example.com/errors', 'ftp://docs.example.com/', 'https://docs.example.com/errors#x'])
      expect(() => createServer({ db: ':memory:', docsUrl: bad }), bad).toThrow(TypeError)
  })

  it('serve --docs-url and RISKCHECK_DOCS_URL set it; a bad one is a usage error (exit 64)', async () => {
    const s = await serveInProcess(['--port', '0', '--db', join(dir, 'a.sqlite'), '--offline', '--log-level', 'silent', '--docs-url', 'https://docs.example.com/e'])
    try {
      const body = (await (await fetch(`${s.url}/v1/account`)).json()) as { error: { docs_url: string } }
      expect(body.error.docs_url).toBe('https://docs.example.com/e#unauthorized')
    } finally {
      s.stop()
      expect(await s.exit).toBe(0)
    }
    const io = memoryIO({ RISKCHECK_DOCS_URL: 'not a url' })
    expect(await runServe(['--port', '0', '--db', join(dir, 'b.sqlite')], io)).toBe(64)
    expect(io.err()).toMatch(/RISKCHECK_DOCS_URL must be an absolute http\(s\) URL/)
  })
})
