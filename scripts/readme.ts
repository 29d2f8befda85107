/**
 * Regenerates the generated blocks of README.md and docs/deployment.md (factor vocabulary, context adjustments, test-mode inputs …) from the
 * code, so the documentation cannot drift: `npx tsx scripts/readme.ts` rewrites them, and test/readme.test.ts fails
 * when README.md differs from what this script would write.
 *
 * A block is the text between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->`.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { generatedBlocks } from './readme-blocks.js'

/** The documents with generated blocks. */
export const GENERATED_DOCS = [fileURLToPath(new URL('../README.md', import.meta.url)), fileURLToPath(new URL('../docs/deployment.md', import.meta.url))]

/** README text with every generated block replaced by its current content. */
export function renderReadme(text: string): string {
  const blocks = generatedBlocks()
  return text.replace(/<!-- generated:([a-z-]+) -->\n[\s\S]*?<!-- \/generated:\1 -->/g, (whole, name: string) => {
    const body = blocks[name]
    if (body === undefined) throw new Error(`README: no generator for block "${name}"`)
    return `<!-- generated:${name} -->\n${body.trimEnd()}\n<!-- /generated:${name} -->`
  })
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const file of GENERATED_DOCS) {
    const before = readFileSync(file, 'utf8')
    const after = renderReadme(before)
    writeFileSync(file, after)
    console.log(`${file}: ${before === after ? 'up to date' : 'regenerated'}`)
  }
}
