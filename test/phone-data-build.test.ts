import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { compileSection, serialise } from '../scripts/build-phone-data.js'
import { parsePrefixTable } from '../src/sources/phone/tables.js'

/** Longest-prefix answer of a source map (prefixes include the calling code). */
function sourceAnswer(source: Map<string, string>, number: string): string | null {
  for (let len = number.length; len > 0; len--) {
    const v = source.get(number.slice(0, len))
    if (v !== undefined) return v
  }
  return null
}

describe('compileSection (minimal longest-prefix tables)', () => {
  it('merges ten siblings with one value into their parent', () => {
    const source = new Map<string, string>()
    for (let d = 0; d < 10; d++) source.set(`447${d}`, 'EE')
    const s = compileSection('44', source)
    expect(s.entries).toEqual([['7', 0]])
    expect(s.values).toEqual(['EE'])
    expect(s.sourceEntries).toBe(10)
  })

  it('cuts a hole ("no data") rather than listing nine siblings', () => {
    const source = new Map<string, string>()
    for (let d = 0; d < 9; d++) source.set(`33${d}`, 'X')
    const s = compileSection('33', source)
    // "" → X for the calling code, "9" → no data
    expect(s.entries).toEqual([
      ['', 0],
      ['9', -1],
    ])
    const t = parsePrefixTable(serialise('test', [], [s]))
    expect(t.lookup('33', '912345')).toBeNull()
    expect(t.lookup('33', '812345')).toBe('X')
  })

  it('keeps the exact calling-code value apart from the compressed entries', () => {
    const source = new Map([
      ['44', 'A&B&C'],
      ['441', 'C'],
      ['442', 'C'],
    ])
    const s = compileSection('44', source)
    expect(s.values[s.ccValue!]).toBe('A&B&C')
    const t = parsePrefixTable(serialise('tz', [], [s]))
    expect(t.countryLevel('44')).toBe('A&B&C')
    expect(t.lookup('44', '1234')).toBe('C')
    expect(t.lookup('44', '3234')).toBe('A&B&C')
  })

  it('rejects a prefix outside its calling code', () => {
    expect(() => compileSection('44', new Map([['331', 'x']]))).toThrow(/outside calling code/)
  })

  it('round-trips through the text format with the same answer for every number (property)', () => {
    const prefix = fc.stringMatching(/^[0-9]{1,6}$/)
    const entries = fc.array(fc.tuple(prefix, fc.constantFrom('a', 'b', 'c', 'd e')), { minLength: 1, maxLength: 60 })
    fc.assert(
      fc.property(entries, fc.array(fc.stringMatching(/^[0-9]{7,9}$/), { minLength: 20, maxLength: 20 }), (list, numbers) => {
        const source = new Map(list.map(([p, v]) => [`7${p}`, v]))
        const compiled = compileSection('7', source)
        expect(compiled.entries.length).toBeLessThanOrEqual(source.size + 10)
        const table = parsePrefixTable(serialise('prop', ['x'], [compiled]))
        for (const n of [...numbers, ...[...source.keys()].map((p) => p.slice(1).padEnd(9, '4'))]) {
          expect(table.lookup('7', n)).toBe(sourceAnswer(source, `7${n}`))
        }
      }),
      { numRuns: 200 },
    )
  })
})
