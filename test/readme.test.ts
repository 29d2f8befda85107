import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { renderReadme } from '../scripts/readme.js'

const readme = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8')

describe('README', () => {
  it('generated blocks match the code (run `npm run readme` to update)', () => {
    expect(renderReadme(readme)).toBe(readme)
  })
  it('shows the two set-up commands and the test command', () => {
    expect(readme).toContain('npm install\nnpx riskcheck check --email')
    expect(readme).toContain('npm test')
  })
})
