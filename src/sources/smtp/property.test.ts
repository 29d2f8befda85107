/**
 * Properties of the SMTP source's parts on random strings and Unicode: the reply reader returns replies or throws
 * its protocol error, the classifier always answers from its closed vocabulary, proxy URLs never leak into errors,
 * and verify() never rejects (what may reach the wire is pinned by the source tests).
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { classifyRcptReply } from './classify.js'
import { parseSmtpProxyUrl } from './proxy.js'
import { createReplyReader, SmtpProtocolError } from './reply.js'
import { createSmtpSource } from './source.js'
import type { SmtpReplyClass } from './types.js'

const CLASSES: SmtpReplyClass[] = ['accepted', 'no_mailbox', 'blocked', 'temporary', 'rejected_other']
const text = fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: 'grapheme', maxLength: 100 }), fc.string({ unit: 'binary', maxLength: 100 }))

describe('SMTP parts on random input', () => {
  it('the reply reader returns well-formed replies or throws SmtpProtocolError, nothing else', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(text, fc.constantFrom('250 OK\r\n', '250-a\r\n', '\r\n', '550 5.1.1 x\n')), { maxLength: 8 }), (chunks) => {
        const reader = createReplyReader()
        try {
          for (const chunk of chunks)
            for (const reply of reader.push(chunk)) {
              expect(reply.code).toBeGreaterThanOrEqual(200)
              expect(reply.code).toBeLessThan(600)
            }
        } catch (e) {
          expect(e).toBeInstanceOf(SmtpProtocolError)
        }
      }),
    )
  })

  it('every reply is classified into the closed vocabulary', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 999 }), fc.option(fc.string({ maxLength: 12 })), text, (code, enhancedCode, t) => {
        expect(CLASSES).toContain(classifyRcptReply({ code, enhancedCode, text: t }))
      }),
    )
  })

  it('a proxy URL is parsed or refused with a TypeError that never repeats it', () => {
    fc.assert(
      fc.property(fc.oneof(text, fc.webUrl(), text.map((s) => `socks5://user:${s}@host.example:1080`)), (value) => {
        try {
          const p = parseSmtpProxyUrl(value, 'smtp.proxy')
          expect(p.label.startsWith('socks5://')).toBe(true)
          expect(p.label).not.toContain('@')
        } catch (e) {
          expect(e).toBeInstanceOf(TypeError)
          if (value.length > 3) expect((e as Error).message).not.toContain(value)
        }
      }),
    )
  })

  it('verify() never rejects on random addresses and MX lists', async () => {
    const smtp = createSmtpSource({ resolveHost: async () => null, totalTimeoutMs: 1_000 })
    await fc.assert(
      fc.asyncProperty(fc.oneof(text, fc.emailAddress()), fc.array(fc.oneof(text, fc.domain()), { maxLength: 4 }), async (address, hosts) => {
        const r = await smtp.verify(address, hosts)
        expect(['unknown', 'unavailable']).toContain(r.smtp_check)
      }),
      { numRuns: 200 },
    )
    await smtp.close()
  })
})
