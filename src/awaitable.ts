/** The one "value or a promise of it" type: store methods may answer synchronously (SQLite) or with a promise. */
export type Awaitable<T> = T | Promise<T>
