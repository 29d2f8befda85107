/**
 * Reads of one event-loop turn as one query: the PostgreSQL store's hot reads (a key's auth record, a result-cache
 * entry) asked by requests arriving together go out as one `… = ANY($1)` statement. Each caller gets its own answer,
 * read after it asked — so a key revoked before a request arrived is seen revoked by it — and a failed query fails
 * every caller of that turn alike.
 */

/**
 * Wraps `run` (answers for many arguments, in their order) into a one-argument function whose calls of one turn share
 * one `run`. An answer may itself be a promise (a caller whose case is settled on its own): it then fails alone.
 */
export function perTurn<A, R>(run: (args: A[]) => Promise<Array<R | PromiseLike<R>>>): (arg: A) => Promise<R> {
  let queue: Array<{ arg: A; resolve: (r: R | PromiseLike<R>) => void; reject: (e: unknown) => void }> = []
  const flush = async () => {
    const items = queue
    queue = []
    try {
      const results = await run(items.map((it) => it.arg))
      items.forEach((it, i) => it.resolve(results[i]!))
    } catch (e) {
      for (const it of items) it.reject(e)
    }
  }
  return (arg) =>
    new Promise<R>((resolve, reject) => {
      if (queue.push({ arg, resolve, reject }) === 1) setImmediate(() => void flush())
    })
}
