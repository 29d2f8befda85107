/** The one "value or a promise of it" type: store methods may answer synchronously (SQLite) or with a promise. */
export type Awaitable<T> = T | Promise<T>

/** True when an {@link Awaitable} is the promise (a thenable), not the value. */
export const isPromise = <T>(v: Awaitable<T>): v is Promise<T> => typeof (v as Promise<T> | null)?.then === 'function'

/** What {@link within} answers for a promise that did not settle in time. */
export const LATE: unique symbol = Symbol('late')

/**
 * `p`'s value, or {@link LATE} when it has not settled within `ms`: a result cache whose `get`, `set` or `close` never
 * settles must not hold a lookup or `close()` (the `cacheTimeoutMs` option). The timer is cleared as soon as `p`
 * settles and never keeps the process alive; a late rejection of `p` is handled (ignored).
 */
export function within<T>(p: Promise<T>, ms: number): Promise<T | typeof LATE> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<typeof LATE>((resolve) => {
    timer = setTimeout(() => resolve(LATE), ms)
    timer.unref?.()
  })
  return Promise.race([p, late]).finally(() => clearTimeout(timer))
}
