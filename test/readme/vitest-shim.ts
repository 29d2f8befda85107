/**
 * `vitest` as a README test block sees it when it runs inside test/readme-blocks.test.ts: `expect` is vitest's own,
 * and `it`/`test` collect their cases so the README test can run them (a test cannot be declared inside another).
 */
export { expect } from 'vitest'

/** The cases declared by the block last run. */
export const collected: Array<{ name: string; fn: () => unknown }> = []

/** Collects a case. */
export function it(name: string, fn: () => unknown): void {
  collected.push({ name, fn })
}

export const test = it
