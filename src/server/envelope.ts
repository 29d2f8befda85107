/**
 * The response envelope and the mapping of every failure to it.
 *
 *   success: { "success": true, "data": … }
 *   failure: { "success": false, "error": { "code", "message", "docs_url", "request_id" } }
 *
 * A RiskcheckError keeps its code and status; framework errors (malformed JSON, schema validation, body too large,
 * unsupported media type) get the matching code of the spec; anything else is a 500 INTERNAL_ERROR whose message
 * never carries internals.
 */
import { ERROR_STATUS, RiskcheckError, type ErrorCode } from '../errors.js'
import type { ErrorEnvelope } from '../schema.js'

/** Default base of `docs_url`; the code is appended as a fragment (`…/errors#rate_limited`). */
export const DEFAULT_DOCS_URL = 'https://riskcheck.dev/docs/errors'

/** Builds the failure body. */
export function errorEnvelope(code: ErrorCode, message: string, requestId: string, docsUrl: string = DEFAULT_DOCS_URL): ErrorEnvelope {
  return { success: false, error: { code, message, docs_url: `${docsUrl}#${code.toLowerCase()}`, request_id: requestId } }
}

/** A failure ready to send: status, body and extra headers. */
export interface MappedError {
  status: number
  code: ErrorCode
  message: string
  headers?: Record<string, string>
  /** True when the error is ours to log (unexpected). */
  internal: boolean
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

function validationMessage(issues: ValidationIssue[], context: string | undefined): { code: ErrorCode; message: string } {
  const missing = issues.find((i) => i.keyword === 'required')
  if (missing) return { code: 'MISSING_FIELD', message: `\`${fieldName(missing, context)}\` is required.` }
  const issue = issues[0] ?? {}
  const field = fieldName(issue, context)
  switch (issue.keyword) {
    case 'additionalProperties':
      return { code: 'INVALID_REQUEST', message: `Unknown field \`${field}\`.` }
    case 'type':
      if (!issue.instancePath) return { code: 'INVALID_REQUEST', message: `The request ${context ?? 'body'} must be a JSON ${String(issue.params?.type ?? 'object')}.` }
      return { code: 'INVALID_REQUEST', message: `\`${field}\` must be of type ${String(issue.params?.type ?? 'another type')}.` }
    case 'maxLength':
      return { code: 'INVALID_REQUEST', message: `\`${field}\` must be at most ${String(issue.params?.limit)} characters.` }
    case 'minLength':
      return { code: 'INVALID_REQUEST', message: `\`${field}\` must be at least ${String(issue.params?.limit)} characters.` }
    case 'enum':
    case 'const':
    case 'anyOf':
      return { code: 'INVALID_REQUEST', message: `\`${field}\` has a value that is not allowed.` }
    default:
      return { code: 'INVALID_REQUEST', message: `\`${field}\` ${issue.message ?? 'is invalid'}.` }
  }
}

/** Maps any thrown value to the envelope's code, status and message. */
export function mapError(error: unknown): MappedError {
  if (error instanceof RiskcheckError) {
    const headers = error.code === 'MAINTENANCE' || error.code === 'UPSTREAM_UNAVAILABLE' ? { 'Retry-After': '30' } : undefined
    return { status: error.status, code: error.code, message: error.message, internal: false, ...(headers ? { headers } : {}) }
  }
  const e = (error ?? {}) as FrameworkError
  if (Array.isArray(e.validation)) {
    const { code, message } = validationMessage(e.validation, e.validationContext)
    return { status: ERROR_STATUS[code], code, message, internal: false }
  }
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, code: 'INPUT_LIMIT_EXCEEDED', message: 'The request body is too large.', internal: false }
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 400, code: 'INVALID_REQUEST', message: 'The request body must be JSON (Content-Type: application/json).', internal: false }
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, code: 'INVALID_REQUEST', message: 'The request body is empty; send a JSON object.', internal: false }
    case 'FST_ERR_BAD_URL':
    case 'FST_ERR_INVALID_URL':
      return { status: 400, code: 'INVALID_REQUEST', message: 'The URL is malformed.', internal: false }
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
