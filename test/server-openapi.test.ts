/**
 * The OpenAPI document: valid against the OpenAPI Initiative's 3.1 schema, every schema in it compiles as JSON
 * Schema 2020-12, every route of the app is in it (and nothing else), and real responses of the server validate
 * against the document's own response schemas.
 */
import { readFileSync } from 'node:fs'
import Ajv2020Module from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ERROR_STATUS } from '../src/errors.js'
import { buildOpenApi, openApiPath, routeErrorCodes, routeRejections } from '../src/server/openapi.js'
import { ROUTES } from '../src/server/routes/index.js'
import { issueApiKey } from '../src/accounts/keys.js'
import type { SqliteStore } from '../src/server/store/sqlite/store.js'
import { startTestServer, type TestServer } from './server-helpers.js'

// ajv and ajv-formats are CJS with a default export (under NodeNext the import is the module object).
type AjvClass = typeof Ajv2020Module.default
type AddFormats = typeof addFormatsModule.default
const Ajv2020 = ((Ajv2020Module as unknown as { default?: AjvClass }).default ?? Ajv2020Module) as AjvClass
const addFormats = ((addFormatsModule as unknown as { default?: AddFormats }).default ?? addFormatsModule) as AddFormats

type Json = Record<string, any>

let s: TestServer
let doc: Json
const ajv = new Ajv2020({ strict: false, allErrors: true, logger: false })
addFormats(ajv)

/** Points `#/components/schemas/X` references at the components registered in `ajv` (compiled once each). */
function deref(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(deref)
  if (node && typeof node === 'object') {
    const ref = (node as Json).$ref
    if (typeof ref === 'string' && ref.startsWith('#/components/schemas/')) {
      const name = ref.slice('#/components/schemas/'.length)
      expect(doc.components.schemas[name], `unresolved ${ref}`).toBeDefined()
      return { $ref: `urn:component:${name}` }
    }
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, deref(v)]))
  }
  return node
}

const operations = () =>
  Object.entries(doc.paths as Json).flatMap(([path, ops]) => Object.entries(ops as Json).map(([method, op]) => ({ path, method, op: op as Json })))

beforeAll(async () => {
  s = await startTestServer()
  const r = await s.get('/v1/openapi.json', null)
  expect(r.status).toBe(200)
  doc = r.body
  for (const [name, schema] of Object.entries(doc.components.schemas as Json)) {
    ajv.addSchema({ ...(deref(schema) as object), $id: `urn:component:${name}` })
  }
})

afterAll(() => s.close())

describe('the OpenAPI document', () => {
  it('validates against the OpenAPI 3.1 schema', () => {
    // Ajv resolves the schema's `$dynamicRef: "#meta"` to the document root (whose unevaluatedProperties then
    // rejects every Schema Object). In this document the only `meta` anchor is `$defs/schema`, so the static
    // reference is the same rule. (The Schema Objects themselves are compiled as JSON Schema 2020-12 below.)
    const text = readFileSync(new URL('./fixtures/openapi/oas-3.1-schema-2022-10-07.json', import.meta.url), 'utf8')
    const schema = JSON.parse(text.replaceAll('"$dynamicRef": "#meta"', '"$ref": "#/$defs/schema"')) as Json
    expect(text.split('"$dynamicAnchor": "meta"')).toHaveLength(2)
    const validate = ajv.compile(schema)
    const ok = validate(doc)
    expect(validate.errors ?? [], JSON.stringify(validate.errors, null, 1)).toEqual([])
    expect(ok).toBe(true)
    expect(doc.openapi).toBe('3.1.0')
    expect(doc.info.version).toMatch(/^\d+\.\d+\.\d+/)
  })

  it('is the document built from the route declarations', () => {
    expect(doc).toEqual(JSON.parse(JSON.stringify(buildOpenApi(ROUTES))))
  })

  it('lists exactly the routes the server answers', async () => {
    const documented = operations().map((o) => `${o.method.toUpperCase()} ${o.path}`).sort()
    expect(documented).toEqual(ROUTES.map((r) => `${r.method} ${openApiPath(r.url)}`).sort())
    for (const { path, method } of operations()) {
      expect(s.app.hasRoute({ method: method.toUpperCase() as 'GET', url: path.replace(/\{(\w+)\}/g, ':$1') }), `${method} ${path}`).toBe(true)
    }
    // And every route Fastify has (apart from the automatic HEAD routes and the HTML dashboard under /dashboard) is
    // documented.
    // printRoutes draws a tree: each level indents by 4 and adds its segment to its parent's path.
    const segments: string[] = []
    const registered: string[] = []
    for (const line of s.app.printRoutes({ commonPrefix: false }).split('\n')) {
      const m = /^([│ ]*)[├└]── (\S+)(?: \(([A-Z, ]+)\))?$/.exec(line)
      if (!m) continue
      const depth = m[1]!.length / 4
      segments.length = depth
      segments[depth] = m[2]!
      for (const method of m[3]?.split(', ') ?? []) {
        const path = segments.join('')
        if (method !== 'HEAD' && !path.startsWith('/dashboard')) registered.push(`${method} ${path}`)
      }
    }
    registered.sort()
    expect(registered).toEqual(documented.map((d) => d.replace(/\{(\w+)\}/g, ':$1')).sort())
  })

  it('every operation: id, security matching its scope, body, success and every error status it can answer', () => {
    const ids = new Set<string>()
    for (const route of ROUTES) {
      const op = doc.paths[openApiPath(route.url)][route.method.toLowerCase()] as Json
      expect(ids.has(op.operationId)).toBe(false)
      ids.add(op.operationId)
      expect(op.security).toEqual(route.scope === null ? [] : [{ bearerAuth: [] }])
      if (route.scope) expect(op['x-required-scope']).toBe(route.scope)
      expect(Boolean(op.requestBody)).toBe(Boolean(route.body))
      expect(op.responses[String(route.status)].content[route.contentType ?? 'application/json'].schema).toBeDefined()
      if (route.probe) {
        // probes: no rate limit, and a 503 with the same body when not ready
        expect(op.responses[String(route.status)].headers).toBeUndefined()
        expect(op.responses['503'].content['application/json'].schema).toEqual(op.responses[String(route.status)].content['application/json'].schema)
        expect(Object.keys(op.responses).sort()).toEqual([String(route.status), '503'])
        continue
      }
      expect(op.responses[String(route.status)].headers['RateLimit-Policy']).toBeDefined()
      const statuses = new Set(routeErrorCodes(route).map((c) => String(ERROR_STATUS[c])))
      for (const st of statuses) {
        expect(op.responses[st]?.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/ErrorEnvelope' })
      }
      const rejections = routeRejections(route).map((r) => String(r.status))
      for (const st of rejections) expect(op.responses[st]?.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/ErrorEnvelope' })
      expect(Object.keys(op.responses).sort()).toEqual([String(route.status), ...statuses, ...rejections].sort())
      if (route.method === 'POST') expect(op.parameters.map((p: Json) => p.name)).toContain('Idempotency-Key')
      expect(op.responses['429'].headers['Retry-After']).toBeDefined()
    }
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' })
  })

  it('every schema compiles as JSON Schema 2020-12', () => {
    for (const name of Object.keys(doc.components.schemas as Json)) {
      expect(() => ajv.getSchema(`urn:component:${name}`), name).not.toThrow()
      expect(ajv.getSchema(`urn:component:${name}`), name).toBeTypeOf('function')
    }
    for (const { op } of operations()) {
      if (op.requestBody) ajv.compile(op.requestBody.content['application/json'].schema)
      for (const res of Object.values(op.responses as Json)) ajv.compile(deref((Object.values(res.content as Json)[0] as Json).schema) as object)
    }
  })

  it("real answers validate against the document's schemas", async () => {
    const bodies: Record<string, unknown> = {
      '/v1/email': { email: 'catchall@example.com' },
      '/v1/phone': { phone: '+44 7400 123456' },
      '/v1/phone/type': { phone: '+1 800 234 5678' },
      '/v1/ip': { ip: '2001:db8::8' },
      '/v1/domain/age': { domain: 'new-domain.example' },
      '/v1/domain/email-auth': { domain: 'grade-c.example' },
      '/v1/check': { email: 'disposable@example.com', ip: '192.0.2.3', context: 'checkout' },
      '/v1/bulk/jobs': { type: 'ip', inputs: ['192.0.2.1', '8.8.8.8'] },
      '/v1/webhook-endpoints': { url: 'https://hooks.example.com/riskcheck', events: ['credits.low'] },
      '/v1/outcomes': { outcomes: [{ input: 'jane@example.org', type: 'email', outcome: 'bounced', note: 'hard bounce' }, { request_id: 'req_000000000000000000000000', outcome: 'fraud' }] },
      '/v1/bulk/jobs/:id/retry': {},
      '/v1/webhook-endpoints/:id/rotate-secret': {},
      '/v1/lists': { name: 'Chargebacks', kind: 'block', item_type: 'email_domain' },
      '/v1/lists/:id/items/remove': { values: ['other.io', 'not a domain!'] },
      '/v1/lists/:id/items': { values: ['fraud-ring.io', 'not a domain!'], reason: 'chargebacks', expires_at: '2030-01-01T00:00:00Z' },
      '/v1/reviews/:id/decision': { decision: 'block', note: 'seen before' },
    }
    // A finished job with a row whose source failed (retryable), and an endpoint, for the routes with an id.
    const key = (await issueApiKey(s.app.store, { orgId: s.org.id, mode: 'test', scopes: ['bulk', 'webhooks', 'lists'] }, s.clock.now().getTime())).secret
    const engine = s.app.bulk!.engineFor({ orgId: s.org.id, mode: 'test' })
    const job = await engine.create({ type: 'ip', inputs: ['192.0.2.250', '8.8.8.8'] })
    await engine.waitFor(job.id)
    const db = (s.app.store as SqliteStore).db
    db.prepare('UPDATE bulk_rows SET retryable = 1 WHERE idx = 0 AND job_seq = (SELECT seq FROM bulk_jobs WHERE id = ?)').run(job.id)
    s.tick()
    const endpoint = (await s.post('/v1/webhook-endpoints', bodies['/v1/webhook-endpoints'], key)).body.data
    s.tick()
    const list = (await s.post('/v1/lists', bodies['/v1/lists'], key)).body.data
    // a test-mode Tor exit: its answer's action is review, so it is queued
    expect((await s.post('/v1/ip', { ip: '192.0.2.8' }, s.test)).body.data.recommendation.action).toBe('review')
    const review = (await s.get('/v1/reviews', s.test)).body.data[0]
    const ids: Record<string, string> = { '/v1/bulk/jobs/:id': job.id, '/v1/webhook-endpoints/:id': endpoint.id, '/v1/lists/:id': list.id, '/v1/reviews/:id': review.id }
    // deletions last, an item's before its list's
    const order = [...ROUTES].sort(
      (a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE') || (a.method === 'DELETE' ? b.url.length - a.url.length : 0),
    )
    for (const route of order) {
      s.tick()
      const prefix = Object.keys(ids).find((p) => route.url.startsWith(p))
      const url = (prefix ? route.url.replace(':id', ids[prefix]!) : route.url).replace(':value', 'fraud-ring.io')
      const k = route.scope === 'bulk' || route.scope === 'webhooks' || route.scope === 'lists' ? key : s.test
      const r =
        route.method === 'GET'
          ? await s.get(url, k)
          : route.method === 'DELETE'
            ? await s.request('DELETE', url, { key: k })
            : await s.post(url, bodies[route.url], k)
      expect(r.status, `${route.method} ${route.url}: ${r.raw.slice(0, 300)}`).toBe(route.status)
      const op = doc.paths[openApiPath(route.url)][route.method.toLowerCase()] as Json
      const validate = ajv.compile(deref(op.responses[String(route.status)].content[route.contentType ?? 'application/json'].schema) as object)
      const body = route.contentType === 'text/csv' ? r.raw : r.body
      expect(validate(body), `${route.url}: ${JSON.stringify(validate.errors)}`).toBe(true)
      if (route.body) {
        const validBody = ajv.compile(op.requestBody.content['application/json'].schema)
        expect(validBody(bodies[route.url])).toBe(true)
        expect(validBody({ ...(bodies[route.url] as object), unknown_field: true })).toBe(false)
      }
    }
    const error = await s.post('/v1/ip', { ip: 'x' }, s.test)
    expect(ajv.compile(deref(doc.components.schemas.ErrorEnvelope) as object)(error.body)).toBe(true)
  })
})
