/**
 * Password hashing for dashboard sign-in: scrypt (memory-hard; Node's own crypto, so no native add-on to build),
 * N = 2^15, r = 8, p = 1 (32 MiB and ~50–100 ms per hash), a 16-byte random salt, a 32-byte key. Stored as
 * `scrypt$N$r$p$salt$hash` (base64url), so the cost can be raised later and old hashes still verify.
 */
import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto'

const N = 2 ** 15
const R = 8
const P = 1
const KEY_LENGTH = 32

function scrypt(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  const options: ScryptOptions = { N: n, r, p, maxmem: 256 * n * r + 1024 * 1024 }
  return new Promise((resolve, reject) => scryptCb(password.normalize('NFKC'), salt, KEY_LENGTH, options, (err, key) => (err ? reject(err) : resolve(key))))
}

/** Hashes a password (async: scrypt runs on the thread pool). */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16)
  const key = await scrypt(password, salt, N, R, P)
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${key.toString('base64url')}`
}

/** Whether `password` matches `stored` (constant-time compare); false for anything malformed. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$')
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false
  const [n, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])]
  if (![n, r, p].every((v) => Number.isSafeInteger(v) && v > 0) || n > 2 ** 20 || r > 32 || p > 16) return false
  const expected = Buffer.from(parts[5]!, 'base64url')
  if (expected.length !== KEY_LENGTH) return false
  const key = await scrypt(password, Buffer.from(parts[4]!, 'base64url'), n, r, p)
  return timingSafeEqual(key, expected)
}

/** Shortest and longest password accepted at sign-up (docs/dashboard.md). */
export const PASSWORD_MIN = 10
export const PASSWORD_MAX = 200
