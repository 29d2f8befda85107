/**
 * Per-domain memory of the catch-all answer (does the domain accept any local part?), so many addresses at one domain
 * cost one probe: answers are kept for a TTL, and a probe already running is shared instead of sent again.
 */
import { createTtlCache } from './ttl-cache.js'

/** Options of {@link createCatchAllMemo}. */
export interface CatchAllMemoOptions {
  ttlMs: number
  now: () => number
  /** Called when an answer came from memory (or a running probe). */
  onHit?: () => void
}

/** The memo. */
export interface CatchAllMemo {
  /** The remembered answer (true/false/null = probed but not told), or undefined when none is live. */
  known(domain: string): boolean | null | undefined
  /**
   * The domain's answer: remembered, the running probe's, or `run()`'s (remembered for the TTL). `failed` is true
   * when this call's own probe threw (its session is then unusable); others waiting on it get null.
   */
  probe(domain: string, run: () => Promise<boolean | null>): Promise<{ value: boolean | null; failed: boolean }>
  /** A rejected address proves the domain is not catch-all (kept unless an answer is already live). */
  rememberNotCatchAll(domain: string): void
  clear(): void
}

/**
 * Creates the memo.
 *
 * @example
 * const memo = createCatchAllMemo({ ttlMs: 600_000, now: Date.now })
 * const { value } = await memo.probe('example.com', () => sendRandomRcpt())
 */
export function createCatchAllMemo(options: CatchAllMemoOptions): CatchAllMemo {
  const answers = createTtlCache<boolean | null>({ ttlMs: options.ttlMs, now: options.now })
  const running = new Map<string, Promise<boolean | null>>()
  return {
    known(domain) {
      return answers.get(domain)
    },
    async probe(domain, run) {
      const cached = answers.get(domain)
      if (cached !== undefined) {
        options.onHit?.()
        return { value: cached, failed: false }
      }
      const other = running.get(domain)
      if (other) {
        options.onHit?.()
        return { value: await other, failed: false }
      }
      const mine = run()
      running.set(
        domain,
        mine.catch(() => null),
      )
      try {
        const value = await mine
        answers.set(domain, value)
        return { value, failed: false }
      } catch {
        return { value: null, failed: true }
      } finally {
        running.delete(domain)
      }
    },
    rememberNotCatchAll(domain) {
      answers.setIfAbsent(domain, false)
    },
    clear() {
      answers.clear()
      running.clear()
    },
  }
}
