/** The one "value or a promise of it" type: store methods may answer synchronously (SQLite) or with a promise. */
export type Awaitable<T> = T | Promise<T>

/** True when an {@link Awaitable} is the promise (a thenable), not the value. */
export const isPromise = <T>(v: Awaitable<T>): v is Promise<T> => typeof (v as Promise<T> | null)?.then === 'function'
