/**
 * Outages as they happen, for the tests: a private PostgreSQL 15 cluster (Debian's pg_createcluster on a port of its
 * own; started, crashed with `stop -m immediate`, dropped by the suite — never the machine's shared one) and a TCP
 * proxy in front of it that can freeze (a network partition: connections stay open, nothing answers). Without
 * pg_createcluster, or without the right to run it (root, the postgres user or passwordless sudo), a suite is skipped
 * with a note; `.ci/run` sets RISKCHECK_TEST_REQUIRE_PG_CLUSTER=1, so there that fails the run instead.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import net from 'node:net'
import { userInfo } from 'node:os'

/** How the cluster commands run: directly as root or postgres, else through passwordless sudo when there is one. */
const asAdmin: string[] | null =
  process.getuid?.() === 0 || userInfo().username === 'postgres' ? [] : spawnSync('sudo', ['-n', 'true']).status === 0 ? ['sudo', '-n'] : null

/** Whether a suite needing a private cluster can run; prints why not, or throws when the run requires it. */
export function pgClusterAvailable(suite: string): boolean {
  const tools = spawnSync('pg_createcluster', ['--version']).error === undefined && existsSync('/usr/lib/postgresql/15/bin/postgres')
  if (tools && asAdmin) return true
  const why = tools ? 'the right to run pg_createcluster (root, the postgres user or passwordless sudo)' : "Debian's postgresql-15 (pg_createcluster)"
  const how = `apt-get install -y postgresql-15, then as root: npx vitest run ${suite}`
  if (process.env.RISKCHECK_TEST_REQUIRE_PG_CLUSTER) throw new Error(`${suite} needs ${why} and RISKCHECK_TEST_REQUIRE_PG_CLUSTER is set: ${how}`)
  console.log(`[skipped] ${suite}: needs ${why} for a private PostgreSQL cluster. To run it: ${how} (or .ci/run).`)
  return false
}

/**
 * A port for a private server of an outage suite: RISKCHECK_TEST_OUTAGE_PORT + `offset` when that is set (a range
 * of ports kept for these suites), else a free one of 127.0.0.1.
 */
export async function outagePort(offset: number): Promise<number> {
  const first = Number(process.env.RISKCHECK_TEST_OUTAGE_PORT)
  if (first > 0) return first + offset
  return new Promise((resolve, reject) => {
    const s = net.createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo
      s.close(() => resolve(port))
    })
  })
}

/** A private cluster. */
export interface PgCluster {
  name: string
  port: number
  /** `postgres://postgres@127.0.0.1:PORT/postgres` */
  url: string
  /** Starts it (`pg_ctlcluster start`); {@link PgCluster.ready} says when it accepts connections. */
  start(): void
  /** Resolves once the cluster accepts connections (`pg_isready` says so), however long its start takes. */
  ready(): Promise<void>
  /** A crash: `pg_ctlcluster stop -m immediate` (no checkpoint, connections cut). */
  crash(): void
  /** Stops and removes it. */
  drop(): void
}

const command = (cmd: string, args: string[]): [string, string[]] => (asAdmin && asAdmin.length > 0 ? [asAdmin[0]!, [...asAdmin.slice(1), cmd, ...args]] : [cmd, args])
const run = (cmd: string, args: string[]) => execFileSync(...command(cmd, args), { stdio: ['ignore', 'pipe', 'pipe'] }).toString()
const tryRun = (cmd: string, args: string[]) => spawnSync(...command(cmd, args))

/**
 * Creates and starts a cluster on `port` (default: {@link outagePort}(0)), named after it (`rc_test_PORT`), trusting
 * local connections; resolves once it accepts connections. A cluster of that name left by an interrupted run is
 * replaced.
 */
export async function createPgCluster(port?: number): Promise<PgCluster> {
  const p = port ?? (await outagePort(0))
  const name = `rc_test_${p}`
  tryRun('pg_dropcluster', ['--stop', '15', name])
  run('pg_createcluster', ['15', name, '-p', String(p), '--', '--auth-host=trust', '--auth-local=trust'])
  const cluster: PgCluster = {
    name,
    port: p,
    url: `postgres://postgres@127.0.0.1:${p}/postgres`,
    start: () => void run('pg_ctlcluster', ['15', name, 'start']),
    ready: () => isReady(p),
    crash: () => void run('pg_ctlcluster', ['15', name, 'stop', '-m', 'immediate']),
    drop: () => void tryRun('pg_dropcluster', ['--stop', '15', name]),
  }
  cluster.start()
  await cluster.ready()
  return cluster
}

/** Asks `pg_isready` until the server on `port` accepts connections (its exit status 0), 100 ms apart. */
async function isReady(port: number): Promise<void> {
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => execFile('pg_isready', ['-q', '-h', '127.0.0.1', '-p', String(port)], (err) => resolve(!err)))
    if (ok) return
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** A TCP proxy that can freeze: while frozen, bytes are dropped in the chosen directions and new connections wait. */
export interface FreezableProxy {
  port: number
  /** Drops what either side sends (`'answers'`: only what the server sends — its statements still run). */
  freeze(direction?: 'both' | 'answers'): void
  /** Forwards again; connections that waited are connected. */
  thaw(): void
  close(): Promise<void>
}

/** Starts a proxy on `port` of 127.0.0.1 (default {@link outagePort}(1)) in front of `targetPort`. */
export async function freezableProxy(targetPort: number, port?: number): Promise<FreezableProxy> {
  let frozen: 'both' | 'answers' | null = null
  const held: Array<() => void> = []
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    sockets.add(client)
    client.on('close', () => sockets.delete(client))
    const connect = () => {
      const upstream = net.connect(targetPort, '127.0.0.1')
      sockets.add(upstream)
      upstream.on('close', () => sockets.delete(upstream))
      client.on('data', (d) => {
        if (frozen !== 'both') upstream.write(d)
      })
      upstream.on('data', (d) => {
        if (frozen === null) client.write(d)
      })
      client.on('error', () => upstream.destroy())
      upstream.on('error', () => client.destroy())
      client.on('close', () => upstream.destroy())
      upstream.on('close', () => client.destroy())
    }
    if (frozen === 'both') held.push(connect)
    else connect()
  })
  const listenOn = port ?? (await outagePort(1))
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(listenOn, '127.0.0.1', () => resolve())
  })
  return {
    port: (server.address() as net.AddressInfo).port,
    freeze(direction = 'both') {
      frozen = direction
    },
    thaw() {
      frozen = null
      for (const c of held.splice(0)) c()
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}
