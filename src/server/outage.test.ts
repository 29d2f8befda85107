import { describe, expect, it } from 'vitest'
import { RiskcheckError } from '../errors.js'
import { mapError } from './envelope.js'
import { createAvailability, DependencyDown, markDependency, mayHaveRun, outageOf, type AvailabilityChange } from './outage.js'

const socketError = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code, syscall: 'connect' })
const pgError = (code: string) => Object.assign(new Error('pg'), { code, severity: 'ERROR' })
const sqliteError = (code: string) => Object.assign(new Error('sqlite'), { code })

describe('outageOf', () => {
  it('knows the outages of each dependency, and nothing else', () => {
    expect(outageOf(sqliteError('SQLITE_FULL'))).toBe('database')
    expect(outageOf(sqliteError('SQLITE_READONLY_DBMOVED'))).toBe('database')
    expect(outageOf(sqliteError('SQLITE_BUSY'))).toBe('database')
    expect(outageOf(sqliteError('SQLITE_CONSTRAINT_UNIQUE'))).toBeUndefined()
    expect(outageOf(pgError('57P01'))).toBe('database')
    expect(outageOf(pgError('08006'))).toBe('database')
    expect(outageOf(pgError('57014'))).toBe('database')
    expect(outageOf(pgError('53100'))).toBe('database')
    expect(outageOf(pgError('23505'))).toBeUndefined()
    expect(outageOf(pgError('42601'))).toBeUndefined()
    expect(outageOf(new Error('Connection terminated unexpectedly'))).toBe('database')
    expect(outageOf(new Error('Query read timeout'))).toBe('database')
    expect(outageOf(new Error('timeout exceeded when trying to connect'))).toBe('database')
    expect(outageOf(new Error('Connection is closed.'))).toBe('redis')
    expect(outageOf(Object.assign(new Error('Reached the max retries per request limit'), { name: 'MaxRetriesPerRequestError' }))).toBe('redis')
    expect(outageOf(new DependencyDown('database', 'ECONNREFUSED'))).toBe('database')
  })

  it('counts a refused or cut connection only when its dependency marked it (a lookup\'s own network failure is not one)', () => {
    expect(outageOf(socketError('ECONNREFUSED'))).toBeUndefined()
    expect(outageOf(markDependency(socketError('ECONNREFUSED'), 'database'))).toBe('database')
    expect(outageOf(markDependency(socketError('ECONNRESET'), 'redis'))).toBe('redis')
    // a marked error that is no outage (a syntax error) stays none
    expect(outageOf(markDependency(pgError('42601'), 'database'))).toBeUndefined()
    // the first mark holds
    expect(outageOf(markDependency(markDependency(socketError('ETIMEDOUT'), 'database'), 'redis'))).toBe('database')
  })

  it('looks through causes and aggregate errors', () => {
    expect(outageOf(new Error('wrapped', { cause: sqliteError('SQLITE_IOERR_WRITE') }))).toBe('database')
    expect(outageOf(new AggregateError([new Error('x'), new Error('Query read timeout')]))).toBe('database')
    expect(outageOf(undefined)).toBeUndefined()
    expect(outageOf('SQLITE_FULL')).toBeUndefined()
  })

  it('maps to 503 UPSTREAM_UNAVAILABLE with Retry-After in the envelope; a documented error keeps its own code', () => {
    const m = mapError(sqliteError('SQLITE_FULL'))
    expect(m).toMatchObject({ status: 503, code: 'UPSTREAM_UNAVAILABLE', internal: false, outage: 'database' })
    expect(m.headers?.['Retry-After']).toMatch(/^[1-9][0-9]*$/)
    expect(m.message).not.toMatch(/SQLITE/)
    expect(mapError(new RiskcheckError('UNAUTHORIZED', 'Invalid API key.'))).toMatchObject({ status: 401, code: 'UNAUTHORIZED' })
    expect(mapError(new Error('boom'))).toMatchObject({ status: 500, code: 'INTERNAL_ERROR' })
  })
})

describe('mayHaveRun', () => {
  it('only when the reply, not the statement, may be what was lost', () => {
    expect(mayHaveRun(new Error('Query read timeout'))).toBe(true)
    expect(mayHaveRun(new Error('Connection terminated unexpectedly'))).toBe(true)
    expect(mayHaveRun(markDependency(socketError('ECONNRESET'), 'database'))).toBe(true)
    expect(mayHaveRun(markDependency(socketError('ECONNREFUSED'), 'database'))).toBe(false)
    expect(mayHaveRun(new Error('timeout exceeded when trying to connect'))).toBe(false)
    expect(mayHaveRun(new DependencyDown('database', 'ECONNRESET'))).toBe(false)
    expect(mayHaveRun(pgError('57014'))).toBe(false)
    expect(mayHaveRun(sqliteError('SQLITE_FULL'))).toBe(false)
    expect(mayHaveRun(new Error('Connection is closed.'))).toBe(false)
  })
})

describe('createAvailability', () => {
  /** A probe that fails until `up` is set; counts its calls. */
  const probeOf = () => {
    const p = {
      up: false,
      calls: 0,
      async probe() {
        p.calls++
        if (!p.up) throw new Error('still down')
      },
    }
    return p
  }

  it('one change each way per outage, whatever the number of failures; the gate closes meanwhile; waiting work runs after', async () => {
    const p = probeOf()
    const a = createAvailability({ dependency: 'database', probe: p.probe, intervalMs: 5 })
    const changes: AvailabilityChange[] = []
    a.onChange((c) => changes.push(c))
    expect(a.down).toBe(false)
    a.gate()
    for (let i = 0; i < 50; i++) a.failed(markDependency(socketError('ECONNREFUSED'), 'database'))
    a.refused()
    a.refused()
    expect(a.down).toBe(true)
    expect(() => a.gate()).toThrow(DependencyDown)
    expect(await a.check()).toMatchObject({ ok: false })
    const done: number[] = []
    a.afterRecovery(async () => void done.push(1))
    a.afterRecovery(async () => void done.push(2))
    expect(done).toEqual([])
    p.up = true
    while (a.down) await new Promise((r) => setTimeout(r, 5))
    await new Promise((r) => setTimeout(r, 5))
    expect(done).toEqual([1, 2])
    expect(changes.map((c) => c.state)).toEqual(['down', 'up'])
    expect(changes[1]).toMatchObject({ failures: 50, refused: 2 })
    expect(await a.check()).toEqual({ ok: true })
    a.close()
  })

  it('a database that answered late (a statement it cancelled, a busy pool) is no outage', async () => {
    const p = probeOf()
    const a = createAvailability({ dependency: 'database', probe: p.probe, intervalMs: 60_000 })
    a.failed(pgError('57014'))
    a.failed(pgError('55P03'))
    a.failed(new Error('timeout exceeded when trying to connect'))
    expect(a.down).toBe(false)
    expect(mapError(pgError('57014'))).toMatchObject({ status: 503, code: 'UPSTREAM_UNAVAILABLE' })
    a.close()
  })

  it('a failure that does not gate leaves requests trying; the readiness check probes at once and ends the outage', async () => {
    const p = probeOf()
    const a = createAvailability({ dependency: 'database', probe: p.probe, intervalMs: 60_000, gates: () => false })
    a.failed(pgError('53100'))
    expect(a.down).toBe(true)
    a.gate() // does not throw
    expect((await a.check()).ok).toBe(false)
    p.up = true
    expect(await a.check()).toEqual({ ok: true })
    expect(a.down).toBe(false)
    a.close()
  })
})
