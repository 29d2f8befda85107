/**
 * Long work written once as a generator that pauses (`yield`) every so often, run either to its end at once or a turn
 * of the event loop at a time (other callbacks run between two steps).
 */
import { setImmediate as nextTurn } from 'node:timers/promises'

/** Pausing work: its `yield`s are where it may be interrupted, its return value the result. */
export type Steps<T> = Generator<void, T, void>

/** Runs `steps` to the end now. */
export function runNow<T>(steps: Steps<T>): T {
  for (;;) {
    const step = steps.next()
    if (step.done) return step.value
  }
}

/** Runs `steps` to the end, one turn of the event loop between two of them. */
export async function runInTurns<T>(steps: Steps<T>): Promise<T> {
  for (;;) {
    const step = steps.next()
    if (step.done) return step.value
    await nextTurn()
  }
}
