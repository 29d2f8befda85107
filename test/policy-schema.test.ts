/**
 * The published JSON Schema of policy files: generated from the one TypeBox definition (no drift), a valid draft-07
 * schema, exported by the package, and it accepts the example policies of the repository.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Ajv } from 'ajv'
import { parse } from 'yaml'
import { describe, expect, it } from 'vitest'
import { renderPolicySchema } from '../scripts/policy-schema.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const published = readFileSync(`${root}docs/policy.schema.json`, 'utf8')

describe('docs/policy.schema.json', () => {
  it('is what the schema definition generates (run `npm run policy-schema` to update)', () => {
    expect(published).toBe(renderPolicySchema())
  })

  it('is a strict draft-07 schema that accepts the example policy and rejects a bad one', () => {
    const validate = new Ajv({ strict: true, allErrors: true }).compile(JSON.parse(published))
    const example = parse(readFileSync(`${root}examples/policy/policy.yaml`, 'utf8'))
    expect(validate(example), JSON.stringify(validate.errors)).toBe(true)
    expect(validate({ weights: { ip_vpn: 101, nope: 1 }, contexts: { wedding: {} } })).toBe(false)
    expect(validate.errors!.map((e) => `${e.instancePath} ${e.keyword}`).sort()).toEqual(['/contexts additionalProperties', '/weights additionalProperties', '/weights/ip_vpn maximum'])
  })

  it('is exported as riskcheck/policy.schema.json and shipped in the package', () => {
    const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8'))
    expect(pkg.exports['./policy.schema.json']).toBe('./docs/policy.schema.json')
    expect(pkg.files).toContain('docs/policy.schema.json')
  })
})
