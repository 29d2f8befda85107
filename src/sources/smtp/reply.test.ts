import { describe, expect, it } from 'vitest'
import { createReplyReader, parseReply, SmtpProtocolError } from './reply.js'

describe('parseReply', () => {
  it('joins the lines of a multi-line reply and splits off the first enhanced code', () => {
    expect(parseReply(['550-5.1.1 The email account that you tried to reach does not exist.', '550 5.1.1 Please try again.'])).toEqual({
      code: 550,
      enhancedCode: '5.1.1',
      text: 'The email account that you tried to reach does not exist. Please try again.',
    })
    expect(parseReply(['250 OK'])).toEqual({ code: 250, enhancedCode: null, text: 'OK' })
    expect(parseReply(['421 4.07.000 bye'])).toMatchObject({ enhancedCode: '4.7.0' })
  })
})

describe('createReplyReader', () => {
  it('completes replies across chunks, several per chunk, bare LF too', () => {
    const r = createReplyReader()
    expect(r.push('220 mx.test ESMTP\r\n250-a\r')).toEqual([{ code: 220, enhancedCode: null, text: 'mx.test ESMTP' }])
    expect(r.push('\n250 b\n354 go\r\n')).toEqual([
      { code: 250, enhancedCode: null, text: 'a b' },
      { code: 354, enhancedCode: null, text: 'go' },
    ])
  })

  it.each(['HTTP/1.1 200 OK\r\n', '2500 x\r\n', '199 too low\r\n', '25\r\n'])('refuses a line that is not a reply: %j', (line) => {
    expect(() => createReplyReader().push(line)).toThrow(SmtpProtocolError)
  })

  it('caps line length and the number of lines of one reply', () => {
    expect(() => createReplyReader().push('250 ' + 'x'.repeat(3_000))).toThrow(/too long/)
    expect(() => createReplyReader().push('250-x\r\n'.repeat(70))).toThrow(/too many lines/)
  })
})
