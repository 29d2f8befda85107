import { describe, expect, it } from 'vitest'
import { createPortBlockDetector } from './port-block.js'

describe('createPortBlockDetector', () => {
  it('reports once, after three different domains on three different servers were unreachable', () => {
    const reports: Array<{ domains: string[]; servers: string[] }> = []
    const d = createPortBlockDetector({ onBlocked: (e) => reports.push(e) })
    d.domainUnreachable('a.example', ['192.0.2.1'])
    d.domainUnreachable('a.example', ['192.0.2.1']) // the same domain again is no new evidence
    d.domainUnreachable('b.example', ['192.0.2.2'])
    expect(reports).toHaveLength(0)
    d.domainUnreachable('c.example', ['192.0.2.3', '192.0.2.4'])
    expect(reports).toEqual([{ domains: ['a.example', 'b.example', 'c.example'], servers: ['192.0.2.1', '192.0.2.2', '192.0.2.3'] }])
    d.domainUnreachable('d.example', ['192.0.2.5'])
    expect(reports).toHaveLength(1)
    expect(d.reported).toBe(true)
  })

  it('three domains hosted on one server are one server: not enough', () => {
    const reports: unknown[] = []
    const d = createPortBlockDetector({ onBlocked: (e) => reports.push(e) })
    for (const dom of ['a.example', 'b.example', 'c.example', 'd.example']) d.domainUnreachable(dom, ['192.0.2.1'])
    expect(reports).toHaveLength(0)
  })

  it('never reports once a connection succeeded', () => {
    const reports: unknown[] = []
    const d = createPortBlockDetector({ onBlocked: (e) => reports.push(e) })
    d.domainUnreachable('a.example', ['192.0.2.1'])
    d.connected()
    for (let i = 0; i < 10; i++) d.domainUnreachable(`x${i}.example`, [`192.0.2.${10 + i}`])
    expect(reports).toHaveLength(0)
    expect(d.reported).toBe(false)
  })

  it('a domain with no server address is no evidence; the threshold is configurable', () => {
    const reports: unknown[] = []
    const d = createPortBlockDetector({ threshold: 1, onBlocked: (e) => reports.push(e) })
    d.domainUnreachable('a.example', [])
    expect(reports).toHaveLength(0)
    d.domainUnreachable('b.example', ['192.0.2.9'])
    expect(reports).toHaveLength(1)
  })
})
