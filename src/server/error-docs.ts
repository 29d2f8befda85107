/**
 * The error reference the server serves at `GET /docs/errors`: the table of docs/api.md "Errors" (written from the
 * same {@link ERROR_DESCRIPTIONS}), one row per code with the anchor `docs_url` ends in (`#rate_limited`). So the link
 * in every error envelope leads to documentation that exists on the instance that answered, also in a private network.
 */
import { errorAnchor, ERROR_CODES, ERROR_DESCRIPTIONS, ERROR_STATUS } from '../errors.js'
import { VERSION } from '../version.js'

/** Path of the error reference on the server. */
export const ERROR_DOCS_PATH = '/docs/errors'

const escapeHtml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

/** `text` with `code spans` as <code>, everything else escaped. */
const inline = (text: string) => escapeHtml(text).replace(/`([^`]*)`/g, '<code>$1</code>')

let page: string | undefined

/**
 * The HTML page of the error reference (built once).
 *
 * @example renderErrorDocs().includes('id="rate_limited"') // true
 */
export function renderErrorDocs(): string {
  if (page !== undefined) return page
  const rows = ERROR_CODES.map(
    (code) => `<tr id="${errorAnchor(code)}"><td><code>${code}</code></td><td>${ERROR_STATUS[code]}</td><td>${inline(ERROR_DESCRIPTIONS[code])}</td></tr>`,
  )
  page = [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>riskcheck ${escapeHtml(VERSION)} — errors</title>`,
    '<style>body{font:16px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1f2328}',
    'table{border-collapse:collapse;width:100%}td,th{border:1px solid #d0d7de;padding:.4rem .6rem;text-align:left;vertical-align:top}',
    'tr:target{background:#fff8c5}code{font-size:.9em}</style></head><body>',
    '<h1>Errors</h1>',
    '<p>Every failure answers <code>{ "success": false, "error": { "code", "message", "docs_url", "request_id" } }</code>',
    'with the HTTP status below; <code>docs_url</code> links to the code’s row. The whole API is described by',
    '<a href="/v1/openapi.json"><code>GET /v1/openapi.json</code></a>.</p>',
    '<table><thead><tr><th>code</th><th>status</th><th>when</th></tr></thead><tbody>',
    ...rows,
    '</tbody></table></body></html>',
    '',
  ].join('\n')
  return page
}

/**
 * Checks a documentation base URL (`docsUrl`, `serve --docs-url`): an absolute http(s) URL without a fragment (the
 * code's anchor is appended). Returns it without trailing slashes; throws a TypeError naming `what` otherwise.
 *
 * @example checkDocsUrl('https://docs.example.com/riskcheck/errors', 'docsUrl') // 'https://docs.example.com/riskcheck/errors'
 */
export function checkDocsUrl(value: unknown, what: string): string {
  let url: URL | undefined
  try {
    url = typeof value === 'string' ? new URL(value) : undefined
  } catch {
    url = undefined
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.hash !== '' || String(value).includes('#'))
    throw new TypeError(`${what} must be an absolute http(s) URL without a #fragment (got ${JSON.stringify(String(value).slice(0, 80))})`)
  return withoutTrailingSlashes(String(value))
}

function withoutTrailingSlashes(s: string): string {
  let end = s.length
  while (end > 0 && s.charCodeAt(end - 1) === 0x2f) end--
  return s.slice(0, end)
}

/**
 * The base of every `docs_url`: the documentation the operator named (`docsUrl`), else this server's own reference
 * ({@link ERROR_DOCS_PATH}) under `publicUrl`, else under the address it listens on (`localhost` for a wildcard or
 * loopback address; `http://localhost` before it listens). Never built from request headers.
 *
 * @example docsBase({}, () => ({ address: '127.0.0.1', family: 'IPv4', port: 8080 }))() // 'http://127.0.0.1:8080/docs/errors'
 */
export function docsBase(
  options: { docsUrl?: string | undefined; publicUrl?: string | undefined },
  address: () => import('node:net').AddressInfo | string | null | undefined,
): () => string {
  if (options.docsUrl !== undefined) {
    const fixed = checkDocsUrl(options.docsUrl, 'docsUrl')
    return () => fixed
  }
  if (options.publicUrl !== undefined) {
    const fixed = `${withoutTrailingSlashes(options.publicUrl)}${ERROR_DOCS_PATH}`
    return () => fixed
  }
  let listening: string | undefined
  return () => {
    if (listening !== undefined) return listening
    const a = address()
    if (a === null || a === undefined || typeof a === 'string') return `http://localhost${ERROR_DOCS_PATH}`
    const host = a.address === '0.0.0.0' || a.address === '::' ? 'localhost' : a.family === 'IPv6' || a.address.includes(':') ? `[${a.address}]` : a.address
    listening = `http://${host}:${a.port}${ERROR_DOCS_PATH}`
    return listening
  }
}
