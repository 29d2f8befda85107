/**
 * What counts as text in a request, for the API's schemas and the dashboard's forms alike (one rule, one message):
 * free text that is stored and shown — names, descriptions, ids, addresses typed into a form — takes no control
 * characters but tab, line feed and carriage return; a lookup input of a bulk job takes anything but NUL. NUL is never
 * text: PostgreSQL cannot store it (SQLite can), so without this rule the same request would be a 500 on one engine
 * and stored on the other. Control characters in names would also reach terminals (`riskcheck admin … list`).
 */
import { Type, type StringOptions, type TString } from '@sinclair/typebox'

// Literals (so the regex check of the source tree sees them); the schemas take their source as the pattern.
const TEXT = /^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\ud800-\udfff]*$/u
const NO_NUL = /^[^\u0000]*$/u

/**
 * JSON-schema pattern of free text: no C0 control character but tab, LF and CR, no DEL, and no unpaired UTF-16 surrogate
 * (UTF-8 cannot hold one: PostgreSQL stored U+FFFD in its place, and the text read back was not the text sent).
 */
export const TEXT_PATTERN = TEXT.source
/** JSON-schema pattern of a lookup input: anything but NUL. */
export const NO_NUL_PATTERN = NO_NUL.source

/** A free-text string schema (TypeBox) with the text rule and `options` (maxLength …). */
export const Text = (options: StringOptions = {}): TString => Type.String({ ...options, pattern: TEXT_PATTERN })

/** The end of the message for a value failing `pattern` — "must not contain …" — or undefined for another pattern. */
export function textRuleMessage(pattern: unknown): string | undefined {
  if (pattern === TEXT_PATTERN) return 'must not contain control characters (tab and line breaks are fine) or unpaired surrogates'
  if (pattern === NO_NUL_PATTERN) return 'must not contain NUL characters (U+0000)'
  return undefined
}

/** Why `value` of field `name` is not text (free text, or a lookup input when `input`), or null when it is. */
export function textProblem(name: string, value: string, input = false): string | null {
  const ok = input ? NO_NUL.test(value) : TEXT.test(value)
  return ok ? null : `\`${name}\` ${textRuleMessage(input ? NO_NUL_PATTERN : TEXT_PATTERN)!}.`
}
