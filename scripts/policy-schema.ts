/**
 * Writes docs/policy.schema.json — the JSON Schema of policy files, published as `riskcheck/policy.schema.json` —
 * from its one definition (src/scoring/policy-schema.ts). `npm run policy-schema`; test/policy-schema.test.ts fails
 * when the file differs from what this script would write.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { policyJsonSchema } from '../src/scoring/policy-schema.js'

export const SCHEMA_FILE = fileURLToPath(new URL('../docs/policy.schema.json', import.meta.url))

/** The file's text: the schema as pretty JSON. */
export function renderPolicySchema(): string {
  return JSON.stringify(policyJsonSchema(), null, 2) + '\n'
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  let before = ''
  try {
    before = readFileSync(SCHEMA_FILE, 'utf8')
  } catch {
    // first run
  }
  const after = renderPolicySchema()
  writeFileSync(SCHEMA_FILE, after)
  console.log(before === after ? 'docs/policy.schema.json is up to date' : 'docs/policy.schema.json written')
}
