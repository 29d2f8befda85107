/** The one text rule of requests (src/server/text.ts): the API's schemas and the dashboard's forms. */
import { describe, expect, it } from 'vitest'
import { TEXT_PATTERN, textProblem } from './text.js'

describe('free text', () => {
  it('takes any character but C0 controls (tab, LF, CR allowed), DEL and unpaired surrogates', () => {
    const schema = new RegExp(TEXT_PATTERN, 'u') // as the schemas' validator reads the pattern
    for (const ok of ['plain', 'tab\there\r\n', 'emoji \ud83d\ude00 and 中文', '']) {
      expect(textProblem('x', ok), ok).toBeNull()
      expect(schema.test(ok), ok).toBe(true)
    }
    for (const bad of ['a\u0000b', 'esc\u001b', 'del\u007f', 'lone \ud800', 'lone \udfff end', '\ude00\ud83d']) {
      expect(textProblem('x', bad), bad).toBe('`x` must not contain control characters (tab and line breaks are fine) or unpaired surrogates.')
      expect(schema.test(bad), bad).toBe(false)
    }
  })
})
