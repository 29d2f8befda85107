/**
 * The layout of a data directory and its atomic operations: `current` (the id of the set in force), `sets/<id>/`
 * (complete, immutable sets with their manifest), `staging/<id>/` (a set being built) and `update.lock` (./lock.ts). A
 * set is built in staging, checked, fsynced and renamed into `sets/` before the pointer switches by an atomic rename,
 * so a reader or a crash never sees a half-written set (docs/decisions.md, "Data updates" → "switching sets").
 */
import { randomBytes } from 'node:crypto'
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { parseManifest, type DataManifest } from './manifest.js'

/** The pointer file's name. */
export const POINTER_FILE = 'current'

/** A set id: its UTC creation time and a random suffix (`20261123T061200Z-3fa2c1`); sorts by age. */
const SET_ID = /^\d{8}T\d{6}Z-[0-9a-f]{6}$/

/** True for a well-formed set id (nothing else is ever joined into a path). */
export function isSetId(id: string): boolean {
  return SET_ID.test(id)
}

/**
 * A new set id for a set created at `now` in `dir`: it sorts after every set already there (its time is moved a
 * second past the newest one when the clock says otherwise), so "newest" is always the last id.
 */
export function newSetId(dir: string, now: Date): string {
  let t = now.getTime()
  const newest = listSets(dir).at(-1)
  if (newest) {
    const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z/.exec(newest)
    const last = m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])) : NaN
    if (Number.isFinite(last) && Math.floor(t / 1000) * 1000 <= last) t = last + 1000
  }
  const stamp = new Date(t).toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')
  return `${stamp}-${randomBytes(3).toString('hex')}`
}

/** Directory of set `id`. */
export function setPath(dir: string, id: string): string {
  return join(dir, 'sets', id)
}

/** Directory where set `id` is built. */
export function stagingPath(dir: string, id: string): string {
  return join(dir, 'staging', id)
}

/**
 * The id the pointer names, or null when there is no pointer yet (no update has installed a set). Throws when the
 * pointer exists but does not name a set id.
 */
export function readPointer(dir: string): string | null {
  let text: string
  try {
    text = readFileSync(join(dir, POINTER_FILE), 'utf8')
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw e
  }
  const id = text.trim()
  if (!isSetId(id)) throw new Error(`${join(dir, POINTER_FILE)} does not name a data set (${JSON.stringify(id.slice(0, 40))})`)
  return id
}

/**
 * A cheap token that changes whenever the pointer is replaced (inode, mtime, size), or null when there is none. One
 * `stat` call: readers compare it at most every few seconds.
 */
export function pointerStamp(dir: string): string | null {
  try {
    const s = statSync(join(dir, POINTER_FILE))
    return `${s.ino}:${s.mtimeMs}:${s.size}`
  } catch {
    return null
  }
}

/** Reads and validates the manifest of set `id`. Throws when it is missing or invalid. */
export function readSetManifest(dir: string, id: string): DataManifest {
  const path = join(setPath(dir, id), 'manifest.json')
  let raw: unknown
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'))
  } catch (e) {
    throw new Error(`cannot read ${path}: ${(e as Error).message}`)
  }
  const m = parseManifest(raw)
  if (m.id !== id) throw new Error(`${path} belongs to set ${m.id}, not ${id}`)
  return m
}

/**
 * Checks that every file the manifest names is in the set with its recorded size. Returns the first problem, or null.
 * (Hashes are checked when the set is built; sizes catch a set damaged or deleted underneath.)
 */
export function findSetFileProblem(dir: string, manifest: DataManifest): string | null {
  const base = setPath(dir, manifest.id)
  const files = [...Object.values(manifest.sources).flatMap((s) => s.files), ...manifest.built]
  for (const f of files) {
    try {
      const size = statSync(join(base, f.path)).size
      if (size !== f.bytes) return `${f.path} has ${size} bytes, the manifest says ${f.bytes}`
    } catch {
      return `${f.path} is missing`
    }
  }
  return null
}

/** Ids of the installed sets, oldest first. */
export function listSets(dir: string): string[] {
  try {
    return readdirSync(join(dir, 'sets'))
      .filter(isSetId)
      .sort()
  } catch {
    return []
  }
}

function fsyncPath(path: string): void {
  let fd: number | undefined
  try {
    fd = openSync(path, 'r')
    fsyncSync(fd)
  } catch {
    // directories cannot be fsynced on every platform; the rename is still atomic
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/** Writes a file and fsyncs it. */
export function writeFileDurably(path: string, content: string | Buffer): void {
  const fd = openSync(path, 'w')
  try {
    if (typeof content === 'string') writeSync(fd, content)
    else writeSync(fd, content)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/** Fsyncs every file under `root` and the directories themselves. */
export function fsyncTree(root: string): void {
  for (const entry of readdirSync(root, { withFileTypes: true })) {
    const p = join(root, entry.name)
    if (entry.isDirectory()) fsyncTree(p)
    else fsyncPath(p)
  }
  fsyncPath(root)
}

/** Points `current` at set `id` (atomic rename of a fsynced temporary file). */
export function switchPointer(dir: string, id: string): void {
  if (!isSetId(id)) throw new Error(`not a set id: ${id}`)
  if (!existsSync(setPath(dir, id))) throw new Error(`no set ${id} in ${dir}`)
  const tmp = join(dir, `${POINTER_FILE}.${process.pid}.${randomBytes(3).toString('hex')}.tmp`)
  writeFileDurably(tmp, `${id}\n`)
  renameSync(tmp, join(dir, POINTER_FILE))
  fsyncPath(dir)
}

/** Moves a fully built and fsynced staging directory into `sets/` (atomic rename) and points `current` at it. */
export function installSet(dir: string, id: string): void {
  mkdirSync(join(dir, 'sets'), { recursive: true })
  fsyncTree(stagingPath(dir, id))
  renameSync(stagingPath(dir, id), setPath(dir, id))
  fsyncPath(join(dir, 'sets'))
  switchPointer(dir, id)
}

/**
 * Removes installed sets beyond the newest `keep` (never the current one), and leftovers of crashed updates
 * (`staging/`, temporary pointer files). Call only while holding the lock. Returns the removed set ids.
 */
export function pruneSets(dir: string, keep: number): string[] {
  const current = safePointer(dir)
  const sets = listSets(dir)
  const removable = sets.slice(0, Math.max(0, sets.length - Math.max(1, keep))).filter((id) => id !== current)
  for (const id of removable) rmSync(setPath(dir, id), { recursive: true, force: true })
  rmSync(join(dir, 'staging'), { recursive: true, force: true })
  for (const f of readdirSync(dir)) if (f.startsWith(`${POINTER_FILE}.`) && f.endsWith('.tmp')) rmSync(join(dir, f), { force: true })
  return removable
}

function safePointer(dir: string): string | null {
  try {
    return readPointer(dir)
  } catch {
    return null
  }
}
