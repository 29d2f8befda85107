/**
 * Property: random strings and Unicode fed to list loading and matching give a documented error (a ListsError naming
 * the values, a RiskcheckError for a lookup) or a valid answer — never a crash. Normalised values normalise to
 * themselves, and a listed value always matches its own lookup.
 */
import fc from 'fast-check'
import { listValueText } from './list-values.js'
import { afterAll, describe, expect, it } from 'vitest'
import { RiskcheckError } from '../src/errors.js'
import { compileLists, ListsError } from '../src/lists/compile.js'
import { normalizeListValue } from '../src/lists/normalize.js'
import { LIST_ITEM_TYPES, type ListItemType } from '../src/lists/types.js'
import { createRiskcheck, type Riskcheck } from '../src/riskcheck.js'
import { assertValidResult } from './validate.js'

const text = listValueText(60)
const value = fc.oneof(text, fc.integer(), fc.double(), fc.constant(null), fc.record({ value: text, reason: fc.option(text), expiresAt: fc.option(fc.oneof(text, fc.integer(), fc.date())) }))
const definition = fc.record(
  {
    id: fc.option(text, { nil: undefined }),
    name: text,
    kind: fc.constantFrom('block', 'allow', 'deny'),
    itemType: fc.constantFrom(...LIST_ITEM_TYPES, 'url'),
    items: fc.array(value, { maxLength: 8 }),
  },
  { requiredKeys: ['name', 'kind', 'itemType', 'items'] },
)

describe('list loading: a ListsError or lists, never a crash', () => {
  it('normalizeListValue: a reason or a value that normalises to itself', () => {
    fc.assert(
      fc.property(fc.constantFrom(...LIST_ITEM_TYPES), fc.oneof(text, fc.anything()), (type: ListItemType, v) => {
        const n = normalizeListValue(type, v)
        if (!n.ok) {
          expect(typeof n.reason).toBe('string')
          return
        }
        const again = normalizeListValue(type, n.value)
        expect(again.ok && again.key).toBe(n.key)
      }),
      { numRuns: 2000 },
    )
  })

  it('compileLists on random definitions (and on anything at all)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.array(definition, { maxLength: 4 }), fc.anything()), (defs) => {
        const c = compileLists(defs)
        if (c.ok) return
        expect(c.invalid.length).toBeGreaterThan(0)
        for (const i of c.invalid) expect(typeof i.reason).toBe('string')
        expect(new ListsError(c.invalid)).toBeInstanceOf(TypeError)
      }),
      { numRuns: 500 },
    )
  })
})

describe('matching random inputs against random lists: a valid answer or a documented error', () => {
  const instances: Riskcheck[] = []
  afterAll(async () => {
    for (const rc of instances) await rc.close()
  })

  it('createRiskcheck({ lists }) throws a ListsError or answers every lookup schema-valid', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(definition, { maxLength: 3 }), fc.array(text, { minLength: 1, maxLength: 4 }), fc.boolean(), async (defs, inputs, test) => {
        let rc: Riskcheck
        try {
          rc = createRiskcheck({ mode: test ? 'test' : 'live', offline: true, cache: false, lists: defs as never, velocity: true })
        } catch (e) {
          expect(e).toBeInstanceOf(ListsError)
          return
        }
        instances.push(rc)
        for (const input of inputs) {
          for (const type of ['email', 'ip', 'phone', 'phone_type', 'domain_age', 'email_auth'] as const) {
            try {
              assertValidResult(await rc.lookup(type, input), type)
            } catch (e) {
              if (!(e instanceof RiskcheckError)) throw e
            }
          }
          try {
            assertValidResult(await rc.check({ email: input.slice(0, 320), ip: input.slice(0, 64) }), 'check')
          } catch (e) {
            if (!(e instanceof RiskcheckError)) throw e
          }
        }
      }),
      { numRuns: 60 },
    )
  })

  it('a value on a list matches its own lookup (email, email domain, IP, phone)', async () => {
    const rc = createRiskcheck({ mode: 'test', lists: [] })
    instances.push(rc)
    const cases = fc.oneof(
      fc.emailAddress().map((v) => ['email', 'email', v] as const),
      fc.emailAddress().map((v) => ['email_domain', 'email', v] as const),
      fc.oneof(fc.ipV4(), fc.ipV6()).map((v) => ['ip', 'ip', v] as const),
      fc.integer({ min: 0, max: 999_999 }).map((n) => ['phone', 'phone', `+44 7400 ${String(n).padStart(6, '0')}`] as const),
    )
    await fc.assert(
      fc.asyncProperty(cases, async ([itemType, lookup, v]) => {
        const listed = itemType === 'email_domain' ? v.slice(v.lastIndexOf('@') + 1) : v
        const n = normalizeListValue(itemType, listed)
        if (!n.ok) return
        await rc.reloadLists([{ id: 'l', name: 'l', kind: 'block', itemType, items: [listed] }])
        let r
        try {
          r = await rc.lookup(lookup, v)
        } catch (e) {
          expect(e).toBeInstanceOf(RiskcheckError) // an IP the lookup refuses (INVALID_INPUT)
          return
        }
        if (lookup === 'email' && !(r.details as { syntax_valid: boolean }).syntax_valid) return
        if (lookup === 'phone' && !(r.details as { valid: boolean }).valid) return
        expect(r.details.lists.map((m) => m.list_id)).toEqual(['l'])
      }),
      { numRuns: 300 },
    )
  })
})
