/**
 * Secrets never reach the server's log (docs/decisions.md, "HTTP API" → "secrets in logs"), in three layers: the
 * request serializer logs the path with query values redacted and no headers; pino's `redact` drops
 * `authorization`/`cookie`; every line written is scrubbed of anything shaped like a key, a webhook secret or a bearer
 * credential. Layer 3 wraps the destination; with a pino `transport` it applies to messages only.
 */
import type { FastifyServerOptions } from 'fastify'

/** What replaces a secret in a log line. */
export const REDACTED = '[REDACTED]'

/** Keys and secrets: the recognisable prefix is kept, the rest replaced. Linear: one character class, no nesting. */
const SECRET = /(svc_live_|svc_test_|whsec_)[A-Za-z0-9_-]+/g
/** A bearer credential, as in a logged `Authorization` header. */
const BEARER = /\b(Bearer\s+)[^\s"'\\,;]+/gi

/** `text` with every key-shaped or secret-shaped substring replaced. */
export function redactSecrets(text: string): string {
  return text.replace(SECRET, `$1${REDACTED}`).replace(BEARER, `$1${REDACTED}`)
}

/** The request target with every query value replaced and key-shaped path segments scrubbed. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?')
  const path = redactSecrets(q < 0 ? url : url.slice(0, q))
  if (q < 0) return path
  const names = url
    .slice(q + 1)
    .split('&')
    .filter((p) => p !== '')
    .map((p) => {
      const eq = p.indexOf('=')
      const name = redactSecrets(eq < 0 ? p : p.slice(0, eq)).slice(0, 64)
      return `${name}=${REDACTED}`
    })
  return `${path}?${names.join('&')}`
}

interface LoggedRequest {
  method?: string
  url?: string
  ip?: string
  socket?: { remotePort?: number }
}

/** The request serializer: method, redacted URL, client address. */
function serializeRequest(req: LoggedRequest): Record<string, unknown> {
  return { method: req.method, url: typeof req.url === 'string' ? redactUrl(req.url) : undefined, remoteAddress: req.ip, remotePort: req.socket?.remotePort }
}

interface Destination {
  write(chunk: string): unknown
}

/** A destination that scrubs every line before passing it on. */
export function redactingDestination(dest: Destination): Destination {
  return { write: (chunk: string) => dest.write(redactSecrets(chunk)) }
}

type LoggerOption = FastifyServerOptions['logger']

/**
 * The Fastify `logger` option with the redaction layers added: `false`/undefined stays off; `true` becomes info level
 * on stdout; a config object keeps its level, serializers and destination.
 */
export function redactingLoggerOptions(logger: LoggerOption): LoggerOption {
  if (logger === undefined || logger === false) return false
  const config = (logger === true ? {} : logger) as Record<string, unknown> & {
    serializers?: Record<string, unknown>
    redact?: unknown
    stream?: Destination
    transport?: unknown
    hooks?: Record<string, unknown>
  }
  const paths = ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization', 'headers.cookie']
  const redact = Array.isArray(config.redact)
    ? [...(config.redact as string[]), ...paths]
    : config.redact && typeof config.redact === 'object'
      ? { ...(config.redact as object), paths: [...((config.redact as { paths?: string[] }).paths ?? []), ...paths] }
      : { paths, censor: REDACTED }
  const out: Record<string, unknown> = {
    ...config,
    level: (config.level as string | undefined) ?? 'info',
    serializers: { ...config.serializers, req: serializeRequest },
    redact,
  }
  if (config.transport === undefined) {
    out.stream = redactingDestination(config.stream ?? process.stdout)
  } else {
    out.hooks = {
      ...config.hooks,
      logMethod(this: unknown, args: unknown[], method: (...a: unknown[]) => void) {
        return method.apply(this, args.map((a) => (typeof a === 'string' ? redactSecrets(a) : a)))
      },
    }
  }
  return out as LoggerOption
}
