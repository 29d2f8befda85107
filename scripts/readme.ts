/**
 * Regenerates the generated blocks of README.md and of every document in docs/ (options, factor vocabulary, context
 * adjustments, test-mode inputs, data sources …) from the code, so the documentation cannot drift:
 * `npx tsx scripts/readme.ts` (`npm run readme`) rewrites them, and test/readme.test.ts fails when a document differs
 * from what this script would write.
 *
 * A block is the text between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->`; the generators are in
 * ./readme-blocks.ts. A block may move from one document to another: every Markdown file here is covered.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { generatedBlocks } from './readme-blocks.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** The documents that may hold generated blocks: README.md and every Markdown file in docs/. */
export const GENERATED_DOCS = [
  `${ROOT}README.md`,
  ...readdirSync(`${ROOT}docs`)
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `${ROOT}docs/${f}`),
]

/** The names of the generated blocks a document holds, in order. */
export function blockNames(text: string): string[] {
  return [...text.matchAll(/<!-- generated:([a-z-]+) -->/g)].map((m) => m[1]!)
}

/** A document's text with every generated block replaced by its current content. */
export function renderReadme(text: string): string {
  const blocks = generatedBlocks()
  return text.replace(/<!-- generated:([a-z-]+) -->\n[\s\S]*?<!-- \/generated:\1 -->/g, (whole, name: string) => {
    const body = blocks[name]
    if (body === undefined) throw new Error(`no generator for the block "${name}" (scripts/readme-blocks.ts)`)
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
