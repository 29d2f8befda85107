/** A settable clock for tests. */
export function fakeClock(start: string | Date = '2026-11-22T00:00:00Z') {
  let t = new Date(start).getTime()
  return {
    now: () => new Date(t),
    advance(ms: number) {
      t += ms
    },
    set(d: string | Date) {
      t = new Date(d).getTime()
    },
  }
}
