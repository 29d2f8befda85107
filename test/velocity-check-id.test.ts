/**
 * The two ways a check id reaches a velocity store, kept apart on purpose: the library (`checkId`) gives the store the
 * caller's own id, at once; the server gives it a hash of the request's Idempotency-Key keyed by the database's
 * secret (the store never sees the key), so a count made before that secret is read waits for it.
 */
import { describe, expect, it } from 'vitest'
import { createRiskcheck } from '../src/index.js'
import { createServerVelocity } from '../src/server/velocity.js'
import type { VelocityStore } from '../src/velocity/store.js'

/** A store that records the check id of each hit and answers 1 for every key. */
function recordingStore(): VelocityStore & { ids: Array<string | undefined> } {
  const ids: Array<string | undefined> = []
  return { ids, hit: (keys, _nowMs, checkId) => (ids.push(checkId), keys.map(() => ({ hour: 1, day: 1 }))) }
}

const NOW = Date.parse('2026-11-22T12:00:00Z')

describe('check ids given to the velocity store', () => {
  it('the library gives the caller’s id as is', async () => {
    const store = recordingStore()
    const rc = createRiskcheck({ offline: true, velocity: { secret: 's'.repeat(16), store } })
    await rc.ip('192.0.2.1', { checkId: 'signup-1' })
    await rc.ip('192.0.2.1')
    expect(store.ids).toEqual(['signup-1', undefined])
    await rc.close()
  })

  it('the server gives a keyed hash of the Idempotency-Key, once the database’s secret is read', async () => {
    const store = recordingStore()
    let give!: (s: string) => void
    const secret = new Promise<string>((y) => (give = y))
    const velocity = createServerVelocity({ option: { store }, redisPrefix: 'test', keyHashSecret: secret })!
    const once = { scope: 'org_1:live', key: 'idem-key-1' }
    const counted = velocity.signals(undefined, 'org_1', once).velocity!.count({ ip: '192.0.2.1' }, false, NOW)
    await new Promise((r) => setImmediate(r))
    expect(store.ids).toEqual([]) // waiting for the secret
    give('the database secret')
    expect(await counted).toMatchObject({ ip: { hour: 1, day: 1 } })
    await velocity.signals(undefined, 'org_1', once).velocity!.count({ ip: '192.0.2.1' }, false, NOW)
    await velocity.signals(undefined, 'org_1', { scope: 'org_1:test', key: once.key }).velocity!.count({ ip: '192.0.2.1' }, false, NOW)
    const [first, again, otherScope] = store.ids
    expect(first).toMatch(/^[A-Za-z0-9_-]{32}$/)
    expect(first).not.toContain(once.key)
    expect(again).toBe(first) // the same request counts once
    expect(otherScope).not.toBe(first)
  })
})
