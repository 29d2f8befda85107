/**
 * The response envelope (`{ success: true, data }` /
 * `{ success: false, error: { code, message, docs_url, request_id } }`) and the mapping of every failure to it: a
 * RiskcheckError or {@link HttpRejection} keeps its code and status, framework errors get the matching code, an outage
 * is a 503 (./outage.ts), anything else a 500 with no internals (docs/decisions.md, "HTTP API" → "error statuses").
 */
import { errorAnchor, ERROR_STATUS, RiskcheckError, type ErrorCode } from '../errors.js'
import type { ErrorEnvelope } from '../schema.js'
import { queryIntegerMessage } from './query-integer.js'
import { textRuleMessage } from './text.js'
import { OUTAGE_RETRY_AFTER_SECONDS, outageOf, unavailableError, type Dependency } from './outage.js'

/**
 * Builds the failure body. `docsUrl` is the base of `docs_url` — the error reference, by default the server's own
 * `GET /docs/errors` (./error-docs.ts) — and the code's anchor is appended (`…/docs/errors#rate_limited`).
 */
export function errorEnvelope(code: ErrorCode, message: string, requestId: string, docsUrl: string): ErrorEnvelope {
  return { success: false, error: { code, message, docs_url: `${docsUrl}#${errorAnchor(code)}`, request_id: requestId } }
}

/**
 * A request refused for its form rather than its content, with the HTTP status that says so precisely and one of the
 * documented codes: 405 + `Allow` (wrong method), 408 (too slow), 415 (not JSON, JSON in a charset other than UTF-8, or
 * a Content-Encoding the server does not decode), 431 (request line and headers over 16 KB).
 */
export class HttpRejection extends Error {
  override readonly name = 'HttpRejection'
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly headers?: Record<string, string>,
  ) {
    super(message)
  }
}

/** A failure ready to send: status, body and extra headers. */
export interface MappedError {
  status: number
  code: ErrorCode
  message: string
  headers?: Record<string, string>
  /** True when the error is ours to log (unexpected). */
  internal: boolean
  /** The dependency whose outage the error is (a 503 UPSTREAM_UNAVAILABLE; ./outage.ts). */
  outage?: Dependency
}

interface ValidationIssue {
  keyword?: string
  instancePath?: string
  message?: string
  params?: Record<string, unknown>
}

interface FrameworkError {
  code?: string
  statusCode?: number
  validation?: ValidationIssue[]
  validationContext?: string
  message?: string
}

function fieldName(issue: ValidationIssue, context: string | undefined): string {
  const path = (issue.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.')
  if (issue.keyword === 'required' && typeof issue.params?.missingProperty === 'string') {
    return path ? `${path}.${issue.params.missingProperty}` : issue.params.missingProperty
  }
  if (issue.keyword === 'additionalProperties' && typeof issue.params?.additionalProperty === 'string') {
    return path ? `${path}.${issue.params.additionalProperty}` : issue.params.additionalProperty
  }
  return path || context || 'body'
}

/**
 * What a value failing an enum, a const or a union may be, from the issues Ajv reports for it (a union of literals
 * reports one `const` issue per branch, then `anyOf`): "must be one of a, b, c" or "must be of type boolean or null".
 */
function allowedOf(issues: ValidationIssue[], path: string): string {
  const at = issues.filter((i) => (i.instancePath ?? '') === path)
  const values: unknown[] = []
  const types: string[] = []
  for (const i of at) {
    if (i.keyword === 'const') values.push(i.params?.allowedValue)
    else if (i.keyword === 'enum' && Array.isArray(i.params?.allowedValues)) values.push(...i.params.allowedValues)
    else if (i.keyword === 'type' && typeof i.params?.type === 'string') types.push(i.params.type)
  }
  const literal = values.filter((v) => v !== null).map((v) => (typeof v === 'string' ? v : JSON.stringify(v)))
  if (literal.length > 0) return `must be one of ${literal.join(', ')}${values.includes(null) || types.includes('null') ? ' (or null)' : ''}`
  if (types.length > 0) return `must be of type ${[...new Set(types)].join(' or ')}`
  return 'has a value that is not allowed'
}

function validationMessage(issues: ValidationIssue[], context: string | undefined): { code: ErrorCode; message: string } {
  const missing = issues.find((i) => i.keyword === 'required')
  if (missing) return { code: 'MISSING_FIELD', message: `\`${fieldName(missing, context)}\` is required.` }
  let issue = issues[0] ?? {}
  // A union (`anyOf`) reports each failing branch first: name what the value may be, unless a branch of the right
  // type failed on something more specific (a length, a pattern), which is then the message.
  const union = issues.find((i) => i.keyword === 'anyOf')
  if (union) {
    const path = union.instancePath ?? ''
    const specific = issues.find((i) => (i.instancePath ?? '') === path && !['type', 'const', 'enum', 'anyOf'].includes(i.keyword ?? ''))
    if (!specific) return { code: 'INVALID_REQUEST', message: `\`${fieldName(union, context)}\` ${allowedOf(issues, path)}.` }
    issue = specific
  }
  const field = fieldName(issue, context)
  switch (issue.keyword) {
    case 'additionalProperties':
      return { code: 'INVALID_REQUEST', message: context === 'querystring' ? `Unknown query parameter \`${field}\`.` : `Unknown field \`${field}\`.` }
    case 'type':
      if (!issue.instancePath) return { code: 'INVALID_REQUEST', message: `The request ${context ?? 'body'} must be a JSON ${String(issue.params?.type ?? 'object')}.` }
      return { code: 'INVALID_REQUEST', message: `\`${field}\` must be of type ${String(issue.params?.type ?? 'another type')}.` }
    case 'maxLength':
      return { code: 'INVALID_REQUEST', message: `\`${field}\` must be at most ${String(issue.params?.limit)} characters.` }
    case 'minLength':
      return { code: 'INVALID_REQUEST', message: `\`${field}\` must be at least ${String(issue.params?.limit)} characters.` }
    case 'minItems':
      return { code: 'INVALID_REQUEST', message: `\`${field}\` must have at least ${String(issue.params?.limit)} item${issue.params?.limit === 1 ? '' : 's'}.` }
    case 'enum':
    case 'const':
    case 'anyOf':
      return { code: 'INVALID_REQUEST', message: `\`${field}\` ${allowedOf(issues, issue.instancePath ?? '')}.` }
    case 'pattern': {
      const rule = textRuleMessage(issue.params?.pattern) ?? queryIntegerMessage(issue.params?.pattern)
      if (rule) return { code: 'INVALID_REQUEST', message: `\`${field}\` ${rule}.` }
      return { code: 'INVALID_REQUEST', message: `\`${field}\` ${issue.message ?? 'is invalid'}.` }
    }
    default:
      return { code: 'INVALID_REQUEST', message: `\`${field}\` ${issue.message ?? 'is invalid'}.` }
  }
}

/** The message of a 415: the body is not JSON. */
export const UNSUPPORTED_MEDIA_TYPE = 'The request body must be JSON: send it with Content-Type: application/json.'

/** Maps any thrown value to the envelope's code, status and message. */
export function mapError(error: unknown): MappedError {
  if (error instanceof HttpRejection) {
    return { status: error.status, code: error.code, message: error.message, internal: false, ...(error.headers ? { headers: error.headers } : {}) }
  }
  // (a lookup wraps what failed under it as INTERNAL_ERROR: a database that went down mid-lookup is an outage)
  if (error instanceof RiskcheckError && !(error.code === 'INTERNAL_ERROR' && outageOf(error.cause))) {
    const headers = error.code === 'MAINTENANCE' || error.code === 'UPSTREAM_UNAVAILABLE' ? { 'Retry-After': '30' } : undefined
    return { status: error.status, code: error.code, message: error.message, internal: false, ...(headers ? { headers } : {}) }
  }
  const outage = outageOf(error)
  if (outage) {
    const { message } = unavailableError(outage)
    return { status: 503, code: 'UPSTREAM_UNAVAILABLE', message, headers: { 'Retry-After': String(OUTAGE_RETRY_AFTER_SECONDS) }, internal: false, outage }
  }
  const e = (error ?? {}) as FrameworkError
  if (Array.isArray(e.validation)) {
    // an id in the path longer than any id: no such resource, as before the router took long list item values
    if (e.validationContext === 'params' && e.validation.some((i) => i.keyword === 'maxLength' && /^\/id$/.test(i.instancePath ?? '')))
      return { status: 404, code: 'NOT_FOUND', message: 'Not found: the id in the path is too long to exist.', internal: false }
    const { code, message } = validationMessage(e.validation, e.validationContext)
    return { status: ERROR_STATUS[code], code, message, internal: false }
  }
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, code: 'INPUT_LIMIT_EXCEEDED', message: 'The request body is too large.', internal: false }
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, code: 'INVALID_REQUEST', message: UNSUPPORTED_MEDIA_TYPE, headers: { 'Accept-Post': 'application/json' }, internal: false }
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, code: 'INVALID_REQUEST', message: 'The request body is empty; send a JSON object.', internal: false }
    case 'FST_ERR_BAD_URL':
    case 'FST_ERR_INVALID_URL':
      return { status: 400, code: 'INVALID_REQUEST', message: 'The URL is malformed.', internal: false }
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return { status: 404, code: 'NOT_FOUND', message: 'Not found: the id in the path is too long to exist.', internal: false }
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { status: 400, code: 'INVALID_REQUEST', message: 'The Content-Length does not match the body.', internal: false }
    default:
      break
  }
  if (error instanceof SyntaxError || e.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return { status: 400, code: 'INVALID_REQUEST', message: 'The request body is not valid JSON.', internal: false }
  }
  if (typeof e.statusCode === 'number' && e.statusCode === 503) {
    return { status: 503, code: 'MAINTENANCE', message: 'The service is restarting; retry shortly.', headers: { 'Retry-After': '5' }, internal: false }
  }
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    if (e.statusCode === 413) return { status: 413, code: 'INPUT_LIMIT_EXCEEDED', message: 'The request is too large.', internal: false }
    if (e.statusCode === 404) return { status: 404, code: 'NOT_FOUND', message: 'Not found.', internal: false }
    return { status: 400, code: 'INVALID_REQUEST', message: 'The request is malformed.', internal: false }
  }
  return { status: 500, code: 'INTERNAL_ERROR', message: 'An internal error occurred; it has been logged. Retry later.', internal: true }
}
