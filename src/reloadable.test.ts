import { describe, expect, it } from 'vitest'
import { gate } from '../test/gate.js'
import { createReloadable } from './reloadable.js'

/** Lets every settled promise's handlers run. */
const settle = () => new Promise((r) => setImmediate(r))

describe('createReloadable: a load that finishes is put in force unless a newer one is', () => {
  it('overlapping loads finishing out of order leave the newest in force', async () => {
    const r = createReloadable<string>('things')
    const older = gate<string>()
    const newer = gate<string>()
    const seen: string[] = []
    const a = r.load(() => older.promise, (v) => seen.push(v))
    const b = r.load(() => newer.promise, (v) => seen.push(v))
    newer.resolve('B')
    expect(await b).toBe('B')
    expect(r.value()).toBe('B')
    older.resolve('A')
    expect(await a).toBe('A') // the older load still answers its own value …
    expect(r.value()).toBe('B') // … but is not put in force over the newer one
    expect(r.current()).toBe('B')
    expect(seen).toEqual(['B'])
  })

  it('loads finishing in order are each put in force', async () => {
    const r = createReloadable<string>('things')
    const first = gate<string>()
    const second = gate<string>()
    const a = r.load(() => first.promise)
    const b = r.load(() => second.promise)
    first.resolve('A')
    await a
    expect(r.value()).toBe('A')
    second.resolve('B')
    await b
    expect(r.value()).toBe('B')
  })

  it('a failed load changes nothing; an older one finishing after it is still put in force', async () => {
    const r = createReloadable<string>('things')
    r.set('given')
    const older = gate<string>()
    const failing = gate<string>()
    const a = r.load(() => older.promise)
    const b = r.load(() => failing.promise)
    failing.reject(new Error('db hiccup'))
    await expect(b).rejects.toThrow('db hiccup')
    expect(r.value()).toBe('given')
    older.resolve('A')
    await a
    expect(r.value()).toBe('A')
  })

  it('a value set now is newer than a load started before it', async () => {
    const r = createReloadable<string>('things')
    const older = gate<string>()
    const a = r.load(() => older.promise)
    r.set('now')
    older.resolve('A')
    await a
    expect(r.value()).toBe('now')
  })

  it('callers wait for the first load; a later load finishing first releases them, and the first does not replace it', async () => {
    const r = createReloadable<string>('things')
    const first = gate<string>()
    const later = gate<string>()
    r.loadFirst(() => first.promise)
    expect(r.value()).toBeNull()
    const waiting = r.current()
    expect(waiting).toBeInstanceOf(Promise)
    const b = r.load(() => later.promise)
    later.resolve('B')
    await b
    expect(await waiting).toBe('B')
    first.resolve('A')
    await settle()
    expect(r.value()).toBe('B')
  })

  it('a failed first load with nothing in force fails the waiters with UPSTREAM_UNAVAILABLE, until a load succeeds', async () => {
    const r = createReloadable<string>('things')
    const first = gate<string>()
    r.loadFirst(() => first.promise)
    const waiting = r.current()
    first.reject(new Error('file gone'))
    await expect(waiting).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', message: 'The things could not be loaded: file gone' })
    await expect(r.current()).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' })
    await r.load(async () => 'B')
    expect(r.current()).toBe('B')
  })

  it('a first load that fails after a later load is in force changes nothing', async () => {
    const r = createReloadable<string>('things')
    const first = gate<string>()
    r.loadFirst(() => first.promise)
    await r.load(async () => 'B')
    first.reject(new Error('late failure'))
    await settle()
    expect(r.current()).toBe('B')
  })

  it('with nothing set nor loading, current() rejects naming what is missing', async () => {
    await expect(createReloadable<string>('things').current()).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', message: 'The things are not loaded.' })
  })
})
