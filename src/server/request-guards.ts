/**
 * The request's form, checked before any work on its content; every refusal is the error envelope with a request id
 * (docs/api.md): client errors of Node's HTTP parser (431, 400, 408) answered on the socket, JSON nested deeper than
 * {@link MAX_BODY_DEPTH}, bodies that are not `application/json` in UTF-8 (415) or are compressed (415). Why: docs/decisions.md,
 * "HTTP API" → "error statuses" and "bounded bodies" and "compressed request bodies".
 */
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify'
import type { ErrorCode } from '../errors.js'
import { RiskcheckError } from '../errors.js'
import { newRequestId } from '../result.js'
import { errorEnvelope, HttpRejection } from './envelope.js'
import { MAX_BODY_DEPTH } from './idempotency.js'

export { MAX_BODY_DEPTH }

/** Largest request line plus headers, in bytes (Node's default `maxHeaderSize`; larger → 431). */
export const MAX_HEADER_BYTES = 16 * 1024

/**
 * Whether the JSON text nests arrays/objects deeper than `max`. One pass over the text, constant memory; brackets
 * inside strings do not count. Malformed JSON is left to the parser.
 */
export function jsonNestsDeeperThan(text: string, max: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++ // backslash: skip the escaped character
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true
    } else if (c === 0x7d || c === 0x5d) depth--
  }
  return false
}

/** Charsets a JSON body may declare: UTF-8 by any of its labels in the WHATWG Encoding Standard, and US-ASCII (a subset of it). */
const JSON_CHARSETS = new Set(['utf-8', 'utf8', 'unicode-1-1-utf-8', 'unicode11utf8', 'unicode20utf8', 'x-unicode20utf8', 'us-ascii'])

/**
 * The charset a Content-Type declares when it is neither UTF-8 nor US-ASCII (`utf-16`, as sent), else undefined.
 * Names are compared without case and quotes (`charset="UTF-8"` is UTF-8).
 */
export function foreignCharset(contentType: string | undefined): string | undefined {
  for (const param of (contentType ?? '').split(';').slice(1)) {
    const eq = param.indexOf('=')
    if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== 'charset') continue
    let value = param.slice(eq + 1).trim()
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1)
    if (!JSON_CHARSETS.has(value.toLowerCase())) return value
  }
  return undefined
}

/**
 * Replaces Fastify's body parsers by one: `application/json`, refused when in another charset than UTF-8 (the body
 * would be read as UTF-8 all the same) or nested too deep, then parsed by Fastify's own JSON parser
 * (prototype-poisoning protection kept). Any other media type is a 415.
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    // Node keeps the first of two Content-Type headers: a charset in the second would go unseen
    if (Array.isArray(sentHeader(request, 'content-type'))) {
      done(new RiskcheckError('INVALID_REQUEST', 'Send one Content-Type header.'), undefined)
      return
    }
    const charset = foreignCharset(request.headers['content-type'])
    if (charset !== undefined) {
      const message = `The request body must be UTF-8: charset ${JSON.stringify(charset.slice(0, 40))} is not accepted.`
      done(new HttpRejection(415, 'INVALID_REQUEST', message, { 'Accept-Post': 'application/json' }), undefined)
      return
    }
    // no body with a JSON Content-Type is no body: a route whose body is optional takes it, one that needs one says so
    if ((body as string).length === 0) {
      done(null, undefined)
      return
    }
    if (jsonNestsDeeperThan(body as string, MAX_BODY_DEPTH)) {
      done(new RiskcheckError('INVALID_REQUEST', `The request body is nested more than ${MAX_BODY_DEPTH} levels deep.`), undefined)
      return
    }
    parseJson(request, body as string, (err, parsed) => {
      // Fastify's parser says "invalid JSON" for valid JSON it refuses on purpose (prototype poisoning): say which key
      if (err && jsonParses(body as string)) {
        done(new RiskcheckError('INVALID_REQUEST', 'The request body has a `__proto__` or `constructor.prototype` key, which the API refuses.'), undefined)
        return
      }
      done(err, parsed)
    })
  })
}

/** Whether `text` is JSON at all (asked only of a body the parser refused). */
function jsonParses(text: string): boolean {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

/**
 * Header `name` (lower case) as the client sent it: undefined when absent, its value when sent once, every value when
 * sent more than once. `request.headers` cannot tell: Node keeps the first of some headers (Authorization) and joins
 * the others with ", ".
 */
export function sentHeader(request: FastifyRequest, name: string): string | string[] | undefined {
  const raw = request.raw.rawHeaders
  const values: string[] = []
  for (let i = 0; i + 1 < raw.length; i += 2) if (raw[i]!.toLowerCase() === name) values.push(raw[i + 1]!)
  return values.length === 0 ? undefined : values.length === 1 ? values[0] : values
}

/** Whether the request carries a body (a Content-Length above 0 or a Transfer-Encoding). */
function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length']
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
}

/** Throws a 415 when the request's body has a Content-Encoding other than identity (call before parsing). */
export function refuseEncodedBody(request: FastifyRequest): void {
  const header = request.headers['content-encoding']
  if (header === undefined || !hasBody(request)) return
  const codings = header
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity')
  if (codings.length === 0) return
  throw new HttpRejection(
    415,
    'INVALID_REQUEST',
    `Content-Encoding ${JSON.stringify(codings.join(', ').slice(0, 40))} is not accepted: send the JSON body uncompressed.`,
    { 'Accept-Encoding': 'identity' },
  )
}

/** The answer to a client error Node raises on the socket (`reason` is the HTTP parser's own fixed sentence). */
export function clientErrorAnswer(err: { code?: string; reason?: unknown }): { status: number; code: ErrorCode; message: string } {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, code: 'INPUT_LIMIT_EXCEEDED', message: `The request line and headers must be at most ${MAX_HEADER_BYTES / 1024} KB together.` }
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'ERR_HTTP_HEADERS_TIMEOUT':
      return { status: 408, code: 'INVALID_REQUEST', message: 'The request was not received in time.' }
    case 'HPE_INVALID_EOF_STATE':
      return { status: 400, code: 'INVALID_REQUEST', message: 'The connection ended before the body was complete (shorter than its Content-Length).' }
    default: {
      const reason = typeof err.reason === 'string' && /^[\w\s`'.,:-]{1,100}$/.test(err.reason) ? `: ${err.reason}` : ''
      return { status: 400, code: 'INVALID_REQUEST', message: `The request is not valid HTTP/1.1${reason}.` }
    }
  }
}

/**
 * Fastify's `clientErrorHandler`: answers a client error on the socket with the error envelope (and a fresh request
 * id, logged with the error code — never the raw bytes, which may hold an Authorization header), then closes it.
 */
export function createClientErrorHandler(docsUrl: () => string, log: () => FastifyBaseLogger | undefined) {
  return (err: Error & { code?: string; reason?: unknown }, socket: Socket): void => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return
    const id = newRequestId()
    const answer = clientErrorAnswer(err)
    log()?.info({ reqId: id, clientError: err.code ?? 'unknown', status: answer.status }, 'client error')
    // A response already started on this connection cannot be followed by another.
    const started = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true
    if (socket.writable && !started) {
      const body = JSON.stringify(errorEnvelope(answer.code, answer.message, id, docsUrl()))
      socket.write(
        `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? 'Error'}\r\n` +
          'Content-Type: application/json; charset=utf-8\r\n' +
          `Content-Length: ${Buffer.byteLength(body)}\r\n` +
          'Cache-Control: no-store\r\nConnection: close\r\n\r\n' +
          body,
      )
    }
    socket.destroy(err)
  }
}

/** A method-to-path table of the routes, answering which methods a path allows (for 405 + Allow). */
export function createMethodTable(): { add(url: string, method: string): void; allowed(path: string): string[] | undefined } {
  const byPattern = new Map<string, { re: RegExp; methods: string[] }>()
  return {
    add(url, method) {
      const pattern = `^${url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z0-9_]+/g, '[^/]+')}$`
      const entry = byPattern.get(pattern) ?? { re: new RegExp(pattern), methods: [] }
      entry.methods.push(method, ...(method === 'GET' ? ['HEAD'] : []))
      byPattern.set(pattern, entry)
    },
    allowed(path) {
      return [...byPattern.values()].find((e) => e.re.test(path))?.methods
    },
  }
}

/** The 405 for a known path asked with another method. */
export function methodNotAllowed(method: string, path: string, allowed: string[]): HttpRejection {
  const usable = allowed.filter((m) => m !== 'HEAD')
  return new HttpRejection(405, 'INVALID_REQUEST', `${method.slice(0, 20)} is not allowed on ${path}; use ${usable.join(' or ')}.`, { Allow: allowed.join(', ') })
}
