/**
 * Writes docs/api.md, the HTTP API reference, from the OpenAPI document the server builds from its route
 * declarations and the column list of results.csv's writer (`npm run docs`); test/docs.test.ts fails when
 * docs/api.md differs from what this would write.
 */
import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { CSV_BASE_CELLS, detailsPaths } from '../src/bulk/csv.js'
import { BULK_TYPES } from '../src/schema.js'
import { errorAnchor, ERROR_CODES, ERROR_DESCRIPTIONS, ERROR_STATUS } from '../src/errors.js'
import { buildOpenApi } from '../src/server/openapi.js'
import { MAX_HEADER_BYTES } from '../src/server/request-guards.js'
import { MAX_BODY_DEPTH } from '../src/server/idempotency.js'
import { ROUTES } from '../src/server/routes/index.js'
import { EVENT_DATA_FIELDS } from '../src/webhooks/events.js'
import { NO_NUL_PATTERN, TEXT_PATTERN } from '../src/server/text.js'

type Json = Record<string, any>

const API_MD = fileURLToPath(new URL('../docs/api.md', import.meta.url))

/** A short type description of a JSON Schema node (`string`, `integer ≥ 0`, `"a" | "b"`, `array of X`, `X | null`). */
export function typeOf(s: Json | undefined, doc: Json): string {
  if (!s) return 'any'
  if (s.$ref) return `[${String(s.$ref).split('/').pop()}](#${String(s.$ref).split('/').pop()!.toLowerCase()})`
  if (s.const !== undefined) return JSON.stringify(s.const)
  if (Array.isArray(s.enum)) return s.enum.map((v: unknown) => JSON.stringify(v)).join(' \\| ')
  if (Array.isArray(s.anyOf)) return [...new Set(s.anyOf.map((x: Json) => typeOf(x, doc)))].join(' \\| ')
  if (s.type === 'array') return `array of ${typeOf(s.items, doc)}`
  const limits: string[] = []
  if (s.minLength !== undefined) limits.push(`≥ ${s.minLength} chars`)
  if (s.maxLength !== undefined) limits.push(`≤ ${s.maxLength} chars`)
  if (s.pattern === TEXT_PATTERN) limits.push('no control characters but tab and line breaks')
  else if (s.pattern === NO_NUL_PATTERN) limits.push('no NUL')
  else if (s.pattern !== undefined) limits.push(`pattern \`${s.pattern}\``)
  if (s.minimum !== undefined) limits.push(`≥ ${s.minimum}`)
  if (s.maximum !== undefined) limits.push(`≤ ${s.maximum}`)
  if (s.format !== undefined) limits.push(s.format)
  return `${s.type ?? 'any'}${limits.length ? ` (${limits.join(', ')})` : ''}`
}

const cell = (text: unknown) => String(text ?? '').replace(/\|/g, '\\|').replace(/\n/g, ' ')

/** A table of an object schema's fields; nested objects are listed with dotted names. */
function fieldTable(schema: Json, doc: Json): string[] {
  const rows: string[] = ['| field | type | required | description |', '|---|---|---|---|']
  const walk = (s: Json, prefix: string, depth: number) => {
    const required = new Set<string>(s.required ?? [])
    for (const [name, prop] of Object.entries((s.properties ?? {}) as Record<string, Json>)) {
      const inner = prop.anyOf?.find((x: Json) => x.type === 'object' && x.properties) ?? (prop.type === 'object' && prop.properties ? prop : undefined)
      const description = prop.description ?? (prop.anyOf as Json[] | undefined)?.find((x) => x.description)?.description
      rows.push(`| \`${prefix}${name}\` | ${inner ? 'object' + (prop.anyOf ? ' \\| null' : '') : typeOf(prop, doc)} | ${required.has(name) ? 'yes' : 'no'} | ${cell(description)} |`)
      if (inner && depth < 3) walk(inner, `${prefix}${name}.`, depth + 1)
    }
  }
  walk(schema, '', 0)
  return rows.length > 2 ? rows : ['No fields.']
}

/**
 * The "results.csv columns" section: the columns every file starts with and each type's details columns, from the
 * writer itself (src/bulk/csv.ts), so this list is the header `GET /v1/bulk/jobs/{id}/results.csv` writes.
 */
export function resultsCsvColumns(): string[] {
  const out = [
    '## results.csv columns',
    '',
    'The CSV of a bulk job — `GET /v1/bulk/jobs/{id}/results.csv`, `riskcheck bulk --out FILE.csv`, the dashboard\'s',
    '"Results CSV" — has a header line, then one record per unique input. Every file starts with these columns:',
    '',
    '| column | holds |',
    '|---|---|',
    ...CSV_BASE_CELLS.map((c) => `| \`${c.name}\` | ${cell(c.holds)} |`),
    '',
    'Then the details of the job\'s type, flattened to dotted names (arrays joined with `;`, null as an empty cell):',
    '',
    '| type | details columns, in order |',
    '|---|---|',
  ]
  for (const type of BULK_TYPES) out.push(`| \`${type}\` | ${detailsPaths(type).map((p) => `\`${p.join('.')}\``).join(', ')} |`)
  out.push('')
  return out
}

/** The Markdown of docs/api.md. */
export function renderApiReference(): string {
  const doc = buildOpenApi(ROUTES) as Json
  const out: string[] = []
  out.push(
    '# HTTP API reference',
    '',
    '<!-- Generated from the OpenAPI document (src/server/openapi.ts, built from the route declarations in',
    '     src/server/routes/) and the columns of src/bulk/csv.ts by `npm run docs`. Do not edit by hand:',
    '     test/docs.test.ts fails when this file drifts. -->',
    '',
    `Version ${doc.info.version}. ${doc.info.description}`,
    '',
    'The same document is served at `GET /v1/openapi.json`. Start the server with `riskcheck serve` (README, "HTTP API',
    'server"); design decisions behind these answers are in [decisions.md](decisions.md).',
    '',
    '## Conventions',
    '',
    '- **Authentication**: `Authorization: Bearer <key>`, a `svc_live_…` key (billed) or a `svc_test_…` key (test answers,',
    '  free). Each route needs the scope given with it.',
    '- **Bodies**: JSON only (`Content-Type: application/json`, UTF-8, uncompressed). Every POST route declares its body (`{}` or',
    `  no body where it takes no fields); unknown fields are refused; bodies nest at most ${MAX_BODY_DEPTH} levels.`,
    '- **Text**: ids, names and descriptions take no control characters but tab and line breaks, and bulk inputs no NUL',
    '  (U+0000): anything else is a 400 `INVALID_REQUEST` naming the field, on SQLite and PostgreSQL alike. (Single',
    '  lookups take any string and say in the result what is wrong with it.)',
    '- **Numbers in queries**: `limit`, `min_score` and `max_score` are whole numbers in plain decimal digits, with no',
    '  sign and no leading zero (`0` alone where the range starts at 0), on every route: `limit=01` is a 400',
    '  `INVALID_REQUEST` that says the range, as is a number outside it. A route that needs a key refuses a query',
    '  parameter it does not read: `POST /v1/email?smtp=false` is a 400 `INVALID_REQUEST` naming `smtp`, not a lookup',
    '  run as if it had been read. The public routes (probes, pricing, the OpenAPI document) take any.',
    '- **Idempotency**: `Idempotency-Key` on any POST (1–255 printable ASCII characters) makes a retry safe for 24 hours:',
    '  the same key and body replay the stored answer (`Idempotent-Replayed: true`); another body is a 409. A repeat while',
    '  the first request still runs is a 409 too, with `Retry-After`: the seconds left of the lease of the server instance',
    '  running it (10 at most with the default lease). Retry then: if that instance died, the retry takes the request',
    "  over and runs it once (the dead request's credits are given back); if it finished, the retry gets its answer.",
    '- **Rate limits**: per key (per client address without a valid key), over a sliding second: a request is accepted',
    '  while fewer than the limit were accepted in the second before it, so no one-second span accepts more. Every answer',
    '  carries `RateLimit-Policy`, `RateLimit` and `X-RateLimit-Limit/Remaining/Reset` (reset: seconds until the oldest',
    '  request counted leaves the window); a 429 carries `Retry-After`, the seconds until a request is accepted again.',
    '- **Pages**: a listing answers `{ "success": true, "data": [...], "next_cursor": … }`; pass `next_cursor` back as',
    '  `cursor` for the next page (null: none). A cursor holds only with the filters of the page it came from (the review',
    '  queue\'s, the outcomes\', a bulk job\'s `action`, a list\'s items\' `value`), from the same org and key mode: with',
    '  other filters it is a 400 `INVALID_REQUEST` whose message names the filters to send again (`` `cursor` was made for',
    '  other filters: … ``), not a page of the new filters from the old position, which would skip or mix rows; a cursor',
    '  of another org, key mode, job, list or listing, or one not in the form given, is a 400 `INVALID_REQUEST`,',
    '  `` `cursor` is not one this API gave. ``',
    '  `limit` may change from page to page; to change a filter, start again without `cursor`.',
    '- **Envelope**: `{ "success": true, "data": … }`, or for every failure, wherever it happens (also malformed HTTP',
    '  caught before routing), `{ "success": false, "error": { "code", "message", "docs_url", "request_id" } }`.',
    '',
    '## Errors',
    '',
    'Each error\'s `docs_url` links to its row (`…#rate_limited`): in this table, which the server also serves at',
    '`GET /docs/errors` (its default `docs_url`), or in the documentation an operator names with `serve --docs-url URL`.',
    '',
    '| code | status | when |',
    '|---|---|---|',
  )
  for (const code of ERROR_CODES) out.push(`| <a id="${errorAnchor(code)}"></a>\`${code}\` | ${ERROR_STATUS[code]} | ${ERROR_DESCRIPTIONS[code]} |`)
  out.push(
    '',
    'The HTTP status is more precise than the code in these cases (the envelope is the same):',
    '',
    '| status | code | when |',
    '|---|---|---|',
    '| 405 | `INVALID_REQUEST` | a known path with another method; `Allow` lists the methods |',
    '| 408 | `INVALID_REQUEST` | the request did not arrive in time (headers and body; 60 s by default) |',
    '| 415 | `INVALID_REQUEST` | a body that is not `application/json` (`Accept-Post: application/json`), declares a charset other than UTF-8 (or US-ASCII), or has a `Content-Encoding` other than identity (`Accept-Encoding: identity`) |',
    `| 431 | \`INPUT_LIMIT_EXCEEDED\` | the request line and headers (the query string included) over ${MAX_HEADER_BYTES / 1024} KB |`,
    '| 400 | `INVALID_REQUEST` | malformed HTTP: a body shorter than its Content-Length, both Content-Length and Transfer-Encoding, a bad header |',
    '',
  )

  const byTag = new Map<string, Array<{ path: string; method: string; op: Json }>>()
  for (const [path, ops] of Object.entries(doc.paths as Json)) {
    for (const [method, op] of Object.entries(ops as Json)) {
      for (const tag of (op as Json).tags as string[]) byTag.set(tag, [...(byTag.get(tag) ?? []), { path, method, op: op as Json }])
    }
  }
  for (const tag of doc.tags as Json[]) {
    const ops = byTag.get(tag.name)
    if (!ops) continue
    out.push(`## ${tag.name}`, '', tag.description, '')
    for (const { path, method, op } of ops) {
      out.push(`### \`${method.toUpperCase()} ${path}\``, '', `${op.summary}.${op.description ? ` ${op.description}` : ''}`, '')
      out.push(`- Operation \`${op.operationId}\`; ${op['x-required-scope'] ? `scope \`${op['x-required-scope']}\`` : 'public (no key)'}.`)
      const params = ((op.parameters ?? []) as Json[]).filter((p) => p.in !== 'header')
      if (params.length > 0) {
        out.push(`- Parameters: ${params.map((p) => `\`${p.name}\` (${p.in}${p.required ? ', required' : ''}: ${typeOf(p.schema, doc)}${p.schema?.description ? ` — ${cell(p.schema.description)}` : ''})`).join('; ')}.`)
      }
      const [success, ...errors] = Object.entries(op.responses as Json).sort(([a], [b]) => Number(a) - Number(b)).reduce<Array<[string, Json]>>((acc, e) => (Number(e[0]) < 400 ? [e, ...acc] : [...acc, e]), [])
      const content = Object.entries((success![1] as Json).content as Json)[0] as [string, Json]
      out.push(`- Success: **${success![0]}** \`${content[0]}\` — ${typeOf(content[1].schema?.properties?.data ?? content[1].schema, doc)}.`)
      out.push(`- Errors: ${errors.map(([status, r]) => `${status} (${cell((r as Json).description)})`).join(' · ')}.`)
      if (op.requestBody) {
        const schema = op.requestBody.content['application/json'].schema as Json
        out.push('', `Body${op.requestBody.required ? '' : ' (optional)'}${schema.description ? ` — ${schema.description}` : ''}:`, '', ...fieldTable(schema, doc))
      }
      out.push('')
    }
    if (tag.name === 'Webhooks') out.push(...eventPayloads())
  }

  out.push(...resultsCsvColumns())
  out.push('## Schemas', '', 'Result objects share one shape: `request`, `metadata`, `verdict`, `risk`, `details` (per lookup), `recommendation`, `partial`.', '')
  for (const [name, schema] of Object.entries(doc.components.schemas as Json)) {
    out.push(`### ${name}`, '')
    if ((schema as Json).description) out.push(String((schema as Json).description), '')
    out.push(...((schema as Json).type === 'object' ? fieldTable(schema as Json, doc) : [`${typeOf(schema as Json, doc)}`]), '')
  }
  return out.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd() + '\n'
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(API_MD, renderApiReference())
  console.log('docs/api.md written')
}

/** The Webhooks section's event payloads: the envelope, then each type's `data` fields. */
function eventPayloads(): string[] {
  const out = [
    '### Event payloads',
    '',
    'Every delivery (format `json`) is the event `{ "id": "evt_…", "type", "created" (unix seconds), "api_version": "1", "org_id", "test_mode", "data" }`, signed in `SVC-Signature`. `test_mode` is true when a test key\'s activity caused the event (its bulk job or review decision; a chat message then starts "riskcheck (test mode):"): the org\'s endpoints get both modes\' events, so a receiver skips test ones where it does live work. The fields of `data` by type:',
    '',
    '| type | field | meaning |',
    '|---|---|---|',
  ]
  for (const [type, fields] of Object.entries(EVENT_DATA_FIELDS)) for (const [field, meaning] of fields) out.push(`| \`${type}\` | \`${field}\` | ${meaning} |`)
  out.push('')
  return out
}
