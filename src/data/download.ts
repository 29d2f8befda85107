/**
 * Downloads for `riskcheck data update`: an HTTP(S) URL, a `file:` URL or a local path, streamed to a file with its
 * SHA-256 and size, a size limit, an idle timeout, retries for network errors and 5xx answers, progress callbacks,
 * and transparent gunzip of gzip-compressed content (detected by its magic bytes; a truncated or corrupt gzip stream
 * fails on its CRC/length trailer). A failed download leaves no file behind. A host that cannot be reached at all (DNS
 * failure, refused, unreachable network) or a failed TLS check is not retried: asking again at once cannot succeed.
 */
import { createHash } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { open, rename, rm, stat } from 'node:fs/promises'
import { Readable, Transform, type TransformCallback } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { fileURLToPath } from 'node:url'
import { createGunzip } from 'node:zlib'
import { httpFailureOf, isUnreachable, networkFailureOf, type NetworkFailure } from '../sources/network-failure.js'
import { VERSION } from '../version.js'

/** A download that failed; `status` is the HTTP status when the server answered, `failure` how the network failed. */
export class DownloadError extends Error {
  constructor(
    message: string,
    readonly status?: number,
    readonly failure?: NetworkFailure,
  ) {
    super(message)
    this.name = 'DownloadError'
  }
}

/** True when the download failed because its host could not be reached at all (DNS, refused, unreachable). */
export function isUnreachableDownload(e: unknown): boolean {
  return e instanceof DownloadError && e.failure !== undefined && isUnreachable(e.failure)
}

/** Options of {@link download}. */
export interface DownloadOptions {
  /** refuse content larger than this (bytes, as downloaded) */
  maxBytes: number
  /** abort when no byte arrives for this long (default 60 s) */
  idleTimeoutMs?: number
  /** tries for network errors and 5xx answers (default 3) */
  tries?: number
  /** gunzip gzip-compressed content (default true) */
  gunzip?: boolean
  /** called as bytes arrive: received so far and the announced total (null when unknown) */
  onProgress?: (received: number, total: number | null) => void
  /** the fetch to use (default: global fetch) */
  fetch?: typeof fetch
  /** waits between tries (default: setTimeout); tests pass a no-op */
  sleep?: (ms: number) => Promise<void>
}

/** What was downloaded. */
export interface Downloaded {
  /** the location as fetched (URL or absolute path) */
  location: string
  /** bytes and SHA-256 as transferred (what an upstream's published checksum covers) */
  bytes: number
  sha256: string
  /** bytes and SHA-256 of the stored file (after gunzip) */
  storedBytes: number
  storedSha256: string
  /** the content was gzip-compressed and was decompressed */
  gunzipped: boolean
}

const isHttp = (s: string) => /^https?:\/\//i.test(s)

/** True when the location is an http(s) or file URL rather than a path. */
export function isUrl(location: string): boolean {
  return isHttp(location) || /^file:\/\//i.test(location)
}

/** A local path of a `file:` URL or a path; null for http(s). */
export function localPathOf(location: string): string | null {
  if (isHttp(location)) return null
  return /^file:\/\//i.test(location) ? fileURLToPath(location) : location
}

/** Counts, hashes and limits the bytes going through, and reports progress. */
class Meter extends Transform {
  readonly hash = createHash('sha256')
  bytes = 0
  first: Buffer | null = null
  constructor(
    private readonly max: number,
    private readonly total: number | null,
    private readonly onProgress?: (received: number, total: number | null) => void,
    private readonly onData?: () => void,
  ) {
    super()
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.bytes += chunk.length
    if (this.first === null) this.first = chunk.subarray(0, 2)
    if (this.bytes > this.max) return cb(new DownloadError(`larger than the limit of ${this.max} bytes`))
    this.hash.update(chunk)
    this.onData?.()
    this.onProgress?.(this.bytes, this.total)
    cb(null, chunk)
  }
}

async function hashFile(path: string): Promise<{ bytes: number; sha256: string }> {
  const h = createHash('sha256')
  let bytes = 0
  await pipeline(createReadStream(path), async function* (src: AsyncIterable<Buffer>) {
    for await (const c of src) {
      h.update(c)
      bytes += c.length
    }
  })
  return { bytes, sha256: h.digest('hex') }
}

async function isGzipFile(path: string): Promise<boolean> {
  const fh = await open(path, 'r')
  try {
    const b = Buffer.alloc(2)
    const { bytesRead } = await fh.read(b, 0, 2, 0)
    return bytesRead === 2 && b[0] === 0x1f && b[1] === 0x8b
  } finally {
    await fh.close()
  }
}

/** One try: the raw bytes of `location` into `rawPath`. */
async function fetchOnce(location: string, rawPath: string, o: DownloadOptions): Promise<{ bytes: number; sha256: string }> {
  const idle = o.idleTimeoutMs ?? 60_000
  const local = localPathOf(location)
  if (local !== null) {
    let size: number
    try {
      const st = await stat(local)
      if (!st.isFile()) throw new DownloadError(`${local} is not a file`)
      size = st.size
    } catch (e) {
      if (e instanceof DownloadError) throw e
      throw new DownloadError(`cannot read ${local}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`)
    }
    if (size > o.maxBytes) throw new DownloadError(`${local} is larger than the limit of ${o.maxBytes} bytes`)
    const meter = new Meter(o.maxBytes, size, o.onProgress)
    await pipeline(createReadStream(local), meter, createWriteStream(rawPath))
    return { bytes: meter.bytes, sha256: meter.hash.digest('hex') }
  }
  const controller = new AbortController()
  let timer: NodeJS.Timeout | undefined
  const arm = () => {
    if (timer) clearTimeout(timer)
    timer = setTimeout(() => controller.abort(new DownloadError(`no data for ${Math.round(idle / 1000)} s`)), idle)
  }
  arm()
  try {
    const res = await (o.fetch ?? fetch)(location, {
      signal: controller.signal,
      redirect: 'follow',
      headers: { 'user-agent': `riskcheck/${VERSION} (data update)`, accept: '*/*' },
    })
    if (!res.ok) {
      await res.body?.cancel().catch(() => undefined)
      throw new DownloadError(`HTTP ${res.status}`, res.status, httpFailureOf(res.status, location))
    }
    const lengthHeader = res.headers.get('content-length')
    const total = lengthHeader !== null && /^\d+$/.test(lengthHeader) ? Number(lengthHeader) : null
    if (total !== null && total > o.maxBytes) throw new DownloadError(`announces ${total} bytes, more than the limit of ${o.maxBytes}`)
    if (!res.body) throw new DownloadError('empty response')
    const meter = new Meter(o.maxBytes, total, o.onProgress, arm)
    await pipeline(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream), meter, createWriteStream(rawPath))
    if (total !== null && meter.bytes !== total) throw new DownloadError(`truncated: ${meter.bytes} of ${total} bytes`)
    return { bytes: meter.bytes, sha256: meter.hash.digest('hex') }
  } catch (e) {
    const reason = controller.signal.aborted ? controller.signal.reason : e
    if (reason instanceof DownloadError) throw reason
    const failure = networkFailureOf(reason, location)
    throw new DownloadError(failure.kind === 'other' ? failure.message.slice(failure.host.length + 2) : failure.message, undefined, failure)
  } finally {
    if (timer) clearTimeout(timer)
  }
}

const retryable = (e: unknown) =>
  e instanceof DownloadError &&
  (e.status === undefined || e.status >= 500 || e.status === 429) &&
  !/limit/.test(e.message) &&
  !isUnreachableDownload(e) &&
  e.failure?.kind !== 'tls'

/**
 * Downloads `location` to `dest`. Rejects with a {@link DownloadError} (the file is removed) on an HTTP error status,
 * a size over the limit, a truncated body, an idle timeout, or a corrupt gzip stream.
 *
 * @example
 * const d = await download('https://check.torproject.org/torbulkexitlist', '/tmp/tor.txt', { maxBytes: 1 << 26 })
 */
export async function download(location: string, dest: string, options: DownloadOptions): Promise<Downloaded> {
  const tries = Math.max(1, options.tries ?? 3)
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)))
  const raw = `${dest}.download`
  let got: { bytes: number; sha256: string } | undefined
  let lastError: unknown
  for (let attempt = 1; attempt <= tries && !got; attempt++) {
    try {
      got = await fetchOnce(location, raw, options)
    } catch (e) {
      lastError = e
      await rm(raw, { force: true })
      if (!retryable(e) || localPathOf(location) !== null || attempt === tries) break
      await sleep(1000 * attempt)
    }
  }
  if (!got) throw lastError instanceof DownloadError ? lastError : new DownloadError(String((lastError as Error)?.message ?? lastError))
  try {
    if (options.gunzip !== false && (await isGzipFile(raw))) {
      try {
        await pipeline(createReadStream(raw), createGunzip(), createWriteStream(dest))
      } catch (e) {
        throw new DownloadError(`corrupt gzip data: ${(e as Error).message}`)
      }
      await rm(raw, { force: true })
      const stored = await hashFile(dest)
      return { location, ...got, storedBytes: stored.bytes, storedSha256: stored.sha256, gunzipped: true }
    }
    await rename(raw, dest)
    return { location, ...got, storedBytes: got.bytes, storedSha256: got.sha256, gunzipped: false }
  } catch (e) {
    await rm(raw, { force: true })
    await rm(dest, { force: true })
    throw e
  }
}

/** Downloads a small text resource (an API answer) into memory. */
export async function downloadText(location: string, dest: string, options: DownloadOptions): Promise<string> {
  await download(location, dest, { ...options, gunzip: false })
  try {
    const { readFile } = await import('node:fs/promises')
    return await readFile(dest, 'utf8')
  } finally {
    await rm(dest, { force: true })
  }
}
