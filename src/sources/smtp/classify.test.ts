import { describe, expect, it } from 'vitest'
import { classifyRcptReply, isRejection, isServiceClosing, isTransientRefusal } from './classify.js'

describe('classifyRcptReply', () => {
  const cases: Array<[number, string | null, string, ReturnType<typeof classifyRcptReply>]> = [
    [250, '2.1.5', 'Accepted', 'accepted'],
    [251, null, 'User not local; will forward', 'accepted'],
    [550, '5.1.1', 'The email account that you tried to reach does not exist.', 'no_mailbox'],
    [550, null, 'No such user here', 'no_mailbox'],
    [550, null, 'Requested action not taken: mailbox unavailable', 'no_mailbox'],
    [553, '5.1.3', 'Invalid address syntax', 'no_mailbox'],
    [550, '5.2.1', 'The email account that you tried to reach is disabled.', 'no_mailbox'],
    [550, '5.1.1', 'Your IP is blocked', 'blocked'],
    [554, '5.7.1', 'Service unavailable; Client host [192.0.2.1] blocked using zen.spamhaus.org', 'blocked'],
    [550, '5.7.1', 'Message rejected', 'blocked'],
    [550, null, 'Rejected by local policy', 'blocked'],
    [550, null, '5.7.606 Access denied, banned sending IP', 'blocked'],
    [550, null, 'Relaying denied', 'blocked'],
    [421, '4.7.0', 'Try again later, closing connection.', 'blocked'],
    [450, '4.2.1', 'The user you are trying to contact is receiving mail at a rate that prevents additional messages', 'temporary'],
    [451, null, 'Greylisted, please try again in 5 minutes', 'blocked'],
    [452, '4.2.2', 'Mailbox full', 'temporary'],
    [550, null, 'Rejected', 'rejected_other'],
    [554, null, 'Transaction failed', 'rejected_other'],
    [550, '5.1.8', 'Bad sender address domain', 'blocked'],
  ]
  it.each(cases)('%i %s %s → %s', (code, enhancedCode, text, expected) => {
    expect(classifyRcptReply({ code, enhancedCode, text })).toBe(expected)
  })
})

describe('rejections and 421', () => {
  it('every 4xx/5xx counts as a rejected recipient (as Postfix counts errors); 421 closes the channel', () => {
    expect(isRejection({ code: 250, enhancedCode: null, text: 'OK' })).toBe(false)
    expect(isRejection({ code: 450, enhancedCode: null, text: 'greylisted' })).toBe(true)
    expect(isRejection({ code: 550, enhancedCode: '5.1.1', text: 'User unknown' })).toBe(true)
    expect(isServiceClosing({ code: 421, enhancedCode: '4.7.0', text: 'Error: too many errors' })).toBe(true)
    expect(isServiceClosing({ code: 450, enhancedCode: null, text: 'later' })).toBe(false)
  })
})

describe('refusals at the greeting', () => {
  it('a 4xx says "not now" (too many connections, busy), a 5xx "not you"', () => {
    expect(isTransientRefusal({ code: 421, enhancedCode: null, text: 'Too many concurrent SMTP connections from this IP address; please try again later.' })).toBe(true)
    expect(isTransientRefusal({ code: 450, enhancedCode: '4.7.1', text: 'busy' })).toBe(true)
    expect(isTransientRefusal({ code: 554, enhancedCode: null, text: 'your IP is blocked' })).toBe(false)
    expect(isTransientRefusal({ code: 220, enhancedCode: null, text: 'ready' })).toBe(false)
  })
})
