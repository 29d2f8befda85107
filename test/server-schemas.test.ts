/**
 * The server's request and response schemas are compiled at their route's first use, not at start: counted, a
 * started server has compiled none and a request compiles its own route's alone; every schema of every route compiles
 * (what Fastify's own compilers check at start); and the lazily compiled validators answer a bad body with the same
 * validation error as before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { compileAllSchemas } from '../src/server/plugins/lazy-compilers.js'
import { startTestServer, type TestServer } from './server-helpers.js'

let a: TestServer
let b: TestServer

beforeAll(async () => {
  a = await startTestServer()
  b = await startTestServer()
})

afterAll(async () => {
  await a?.close()
  await b?.close()
})

describe('schemas compiled at first use', () => {
  it('a started server has compiled none; a request compiles those of its route; every schema compiles', async () => {
    const ok = await b.post('/v1/ip', { ip: '81.2.69.142' })
    expect(ok.status).toBe(200)
    const all = compileAllSchemas(a.app)
    const left = compileAllSchemas(b.app)
    // each route has a body, query or params schema and a response schema per status; some hundreds in all
    expect(all).toBeGreaterThan(100)
    // B compiled the body and query validators and the 200 serializer of POST /v1/ip, and nothing else
    expect(all - left).toBe(3)
    expect(compileAllSchemas(a.app)).toBe(0)
  })

  it('a lazily compiled validator refuses a bad body with the request error, as often as it is asked', async () => {
    const c = await startTestServer()
    try {
      for (let i = 0; i < 2; i++) {
        const bad = await c.post('/v1/ip', { ip: '81.2.69.142', extra: 1 })
        expect(bad.status).toBe(400)
        expect(bad.body.error.code).toBe('INVALID_REQUEST')
        expect(bad.body.error.message).toMatch(/extra/)
      }
      const good = await c.post('/v1/ip', { ip: '81.2.69.142' })
      expect(good.status).toBe(200)
    } finally {
      await c.close()
    }
  })
})
