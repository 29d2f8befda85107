/**
 * The loopback fake DNS server (test/fake-internet/dns-server.ts) in a process of its own, for benchmarks that count
 * their own process's CPU: the answers' cost stays on the server's side, as with a real resolver. Run as a child
 * (`node --import tsx dns-process.ts ZONES_JSON`, prints `{"port": N}`) through {@link startDnsProcess}.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

/** Starts the child with `zones` and answers its address; `close` stops it. */
export async function startDnsProcess(zones: Record<string, unknown>): Promise<{ address: string; close(): void }> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), JSON.stringify(zones)], { stdio: ['ignore', 'pipe', 'inherit'] })
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => resolve((JSON.parse(d.toString()) as { port: number }).port))
    child.once('exit', (code) => reject(new Error(`the DNS process exited (${code})`)))
  })
  return { address: `127.0.0.1:${port}`, close: () => void child.kill() }
}

// as the child: serve until killed
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { startDnsServer } = await import('../../../test/fake-internet/dns-server.js')
  const dns = await startDnsServer({ zones: JSON.parse(process.argv[2] ?? '{}') })
  // the server keeps each question it was asked: cleared now and then, so a long run does not grow the process
  setInterval(() => dns.queries.splice(0), 1000).unref()
  process.stdout.write(`${JSON.stringify({ port: dns.port })}\n`)
}
