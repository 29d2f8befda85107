/**
 * The lease of one server instance over its store's {@link InstanceLeases} (docs/decisions.md "Instance leases"):
 * taken at start, renewed every third of its length, given up at a clean stop. Each renewal also sweeps: the holds
 * of instances whose lease ended are refunded, and this instance's own holds whose settlement failed are released.
 */
import { randomBytes } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import type { HoldRef } from '../accounts/types.js'
import type { InstanceLeases } from './store/contracts/store.js'
import { INSTANCE_LEASE_MS } from './store/common/lease-times.js'

/** A running instance's lease. */
export interface InstanceLease {
  /** `inst_` + 16 hex characters, new at every start. */
  readonly id: string
  /** Takes the lease (the first renewal) and starts renewing it; rejects when the store cannot be written. */
  start(): Promise<void>
  /** A new hold for a request of this instance (`<instance id>.<n>`). */
  hold(): HoldRef
  /** A hold whose settlement failed: released by the next renewal (when it is still open). */
  unsettled(holdId: string): void
  /** One renewal and sweep now (what the timer runs). */
  renew(): Promise<void>
  /** Stops renewing and gives the lease up, releasing what this instance still holds. */
  stop(): Promise<void>
}

/** Options of {@link createInstanceLease}. */
export interface InstanceLeaseOptions {
  nowMs: () => number
  log: () => FastifyBaseLogger | undefined
  /** Lease length in ms (default {@link INSTANCE_LEASE_MS}); renewed every third of it. */
  leaseMs?: number
}

/** The lease of this instance over `leases`; nothing runs until `start()`. */
export function createInstanceLease(leases: InstanceLeases, options: InstanceLeaseOptions): InstanceLease {
  const id = `inst_${randomBytes(8).toString('hex')}`
  const leaseMs = options.leaseMs ?? INSTANCE_LEASE_MS
  const unsettled = new Set<string>()
  let timer: NodeJS.Timeout | undefined
  let running: Promise<void> | undefined
  let failing = false
  let holds = 0

  const once = async () => {
    const now = options.nowMs()
    const r = await leases.renewLease(id, now, leaseMs)
    // (after failed renewals the database was down: its outage lines say so)
    if (!r.held && timer && !failing) options.log()?.warn({ instance: id }, 'instance lease had run out: its requests in flight were released and answer 503')
    if (r.expired) {
      const n = await leases.releaseExpired(now)
      if (n > 0) options.log()?.info({ instance: id, released: n }, 'refunded the credit holds of stopped instances')
    }
    if (unsettled.size > 0) {
      const ids = [...unsettled]
      await leases.releaseHolds(ids, now)
      for (const h of ids) unsettled.delete(h)
    }
  }
  const renew = () =>
    (running ??= once()
      .then(
        () => {
          failing = false
        },
        (err: unknown) => {
          // one line per failure streak (none for an outage of the database: it has lines of its own)
          if (!failing) options.log()?.warn({ instance: id, err }, 'instance lease renewal failed')
          failing = true
        },
      )
      .finally(() => (running = undefined)))

  return {
    id,
    async start() {
      await once()
      timer ??= setInterval(() => void renew(), Math.max(10, Math.floor(leaseMs / 3)))
      timer.unref()
    },
    hold: () => ({ id: `${id}.${++holds}`, instanceId: id }),
    unsettled: (holdId) => void unsettled.add(holdId),
    renew,
    async stop() {
      if (!timer) return
      clearInterval(timer)
      timer = undefined
      await running
      await leases.releaseExpired(options.nowMs(), id)
    },
  }
}
