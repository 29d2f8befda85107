/** A promise settled by hand, so a test decides the order things finish in (no sleeps). */
export interface Gate<T> {
  promise: Promise<T>
  resolve(v: T): void
  reject(e: unknown): void
}

/** A new {@link Gate}. */
export function gate<T>(): Gate<T> {
  let resolve!: (v: T) => void, reject!: (e: unknown) => void
  const promise = new Promise<T>((y, n) => ((resolve = y), (reject = n)))
  return { promise, resolve, reject }
}
