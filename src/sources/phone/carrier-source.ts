/**
 * The live carrier source contract (`phone.carrierSource` option): a provider that knows, for a US or Canadian
 * number, its current carrier, line type and routing (porting data), which the numbering plan cannot tell.
 *
 * Ship your own by implementing {@link PhoneCarrierSource}; `createTwilioCarrierSource` (./twilio.ts) is the bundled
 * adapter. The phone source wraps every call with {@link lookupCarrierSafely}, so an implementation may simply throw
 * (or reject) on failure; it should honour `signal`/`timeoutMs`, but a hung implementation is cut off anyway.
 */
import type { LineType } from '../../schema.js'

/**
 * What a live source knows about one number. Every field is null when the source did not say.
 * Fields map 1:1 onto the phone details: `carrier.name/type/ocn/mcc/mnc/ported/original_carrier`,
 * `routing.lrn/lata`, `location.rate_center`, and `line_type`.
 */
export interface LiveCarrierRecord {
  /** The line type in the documented vocabulary; null: the source did not tell (the numbering plan's answer stays). */
  lineType: LineType | null
  /** The source's own word for the line/carrier type (e.g. Twilio's `nonFixedVoip`) → `carrier.type`. */
  carrierType: string | null
  /** Current carrier (after porting, when the source knows porting). */
  carrierName: string | null
  /** NANP Operating Company Number of the current carrier. */
  ocn: string | null
  mcc: string | null
  mnc: string | null
  /** The number was ported away from its original carrier. */
  ported: boolean | null
  /** The carrier the number block was first assigned to. */
  originalCarrier: string | null
  /** Location Routing Number (10 digits) of a ported number. */
  lrn: string | null
  lata: string | null
  rateCenter: string | null
}

/** Options of one live lookup. */
export interface CarrierLookupOptions {
  /** Give up after this many ms (the caller also enforces it). */
  timeoutMs: number
  /** Aborted when the caller gives up. */
  signal?: AbortSignal
}

/** A live carrier/line-type source for US and Canadian numbers. */
export interface PhoneCarrierSource {
  /** Short name reported in `metadata.data_sources` (default `carrier`), e.g. `twilio`. */
  readonly name?: string
  /**
   * Looks up one number, given in E.164 (`+14155552671`). Resolves with what the source knows, or throws/rejects
   * (any error) when it cannot answer.
   */
  lookup(e164: string, options: CarrierLookupOptions): Promise<LiveCarrierRecord>
}

/** Why a live lookup gave no record. */
export type CarrierFailure = 'timeout' | 'http' | 'malformed' | 'network' | 'rejected'

/**
 * The error a carrier source throws. `kind` says why: `timeout`, `http` (non-2xx status), `malformed` (the body is
 * not the expected JSON), `network` (connection failed), `rejected` (the provider answered but could not look the
 * number up, e.g. Twilio error 60601 for Canadian numbers without NPAC approval).
 */
export class PhoneCarrierError extends Error {
  override readonly name = 'PhoneCarrierError'
  readonly kind: CarrierFailure
  /** HTTP status, when there was one. */
  readonly status: number | undefined
  /** The provider's error code, when it gave one (e.g. Twilio 20404, 60601). */
  readonly providerCode: string | undefined

  constructor(kind: CarrierFailure, message: string, details: { status?: number; providerCode?: string; cause?: unknown } = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause })
    this.kind = kind
    this.status = details.status
    this.providerCode = details.providerCode
  }
}

/** The outcome of a guarded live lookup: never an exception. */
export type CarrierLookupOutcome =
  | { ok: true; source: string; record: LiveCarrierRecord }
  | { ok: false; source: string; failure: CarrierFailure; message: string }

/** A record with every field null (nothing known). */
export function emptyCarrierRecord(): LiveCarrierRecord {
  return {
    lineType: null,
    carrierType: null,
    carrierName: null,
    ocn: null,
    mcc: null,
    mnc: null,
    ported: null,
    originalCarrier: null,
    lrn: null,
    lata: null,
    rateCenter: null,
  }
}

/** True when `v` has the shape of a {@link PhoneCarrierSource}. */
export function isPhoneCarrierSource(v: unknown): v is PhoneCarrierSource {
  return typeof v === 'object' && v !== null && typeof (v as { lookup?: unknown }).lookup === 'function'
}

const LINE_TYPES = new Set<LineType>(['mobile', 'landline', 'voip', 'toll_free', 'premium', 'unknown'])
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null)

/** Keeps only well-typed fields of what a (possibly user-written) source returned. */
function sanitize(r: unknown): LiveCarrierRecord {
  const o = (typeof r === 'object' && r !== null ? r : {}) as Record<string, unknown>
  return {
    lineType: typeof o.lineType === 'string' && LINE_TYPES.has(o.lineType as LineType) ? (o.lineType as LineType) : null,
    carrierType: str(o.carrierType),
    carrierName: str(o.carrierName),
    ocn: str(o.ocn),
    mcc: str(o.mcc),
    mnc: str(o.mnc),
    ported: typeof o.ported === 'boolean' ? o.ported : null,
    originalCarrier: str(o.originalCarrier),
    lrn: str(o.lrn),
    lata: str(o.lata),
    rateCenter: str(o.rateCenter),
  }
}

/**
 * Runs `source.lookup` with a hard deadline and turns every failure into a `{ ok: false }` outcome: a throw, a
 * rejection, a non-object answer, or no answer within `timeoutMs` (the signal passed to the source is aborted then).
 *
 * @example
 * const out = await lookupCarrierSafely(twilio, '+14155552671', 3000)
 * if (!out.ok) console.log(out.failure) // 'timeout' | 'http' | …
 */
export async function lookupCarrierSafely(source: PhoneCarrierSource, e164: string, timeoutMs: number): Promise<CarrierLookupOutcome> {
  const name = typeof source.name === 'string' && source.name !== '' ? source.name : 'carrier'
  const controller = new AbortController()
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<CarrierLookupOutcome>((resolve) => {
    timer = setTimeout(() => {
      controller.abort(new PhoneCarrierError('timeout', `no answer within ${timeoutMs} ms`))
      resolve({ ok: false, source: name, failure: 'timeout', message: `${name}: no answer within ${timeoutMs} ms` })
    }, timeoutMs)
  })
  const attempt = (async (): Promise<CarrierLookupOutcome> => {
    try {
      const record = await source.lookup(e164, { timeoutMs, signal: controller.signal })
      if (typeof record !== 'object' || record === null)
        return { ok: false, source: name, failure: 'malformed', message: `${name}: the source returned no record` }
      return { ok: true, source: name, record: sanitize(record) }
    } catch (e) {
      const failure: CarrierFailure = e instanceof PhoneCarrierError ? e.kind : 'network'
      return { ok: false, source: name, failure, message: `${name}: ${e instanceof Error ? e.message : String(e)}` }
    }
  })()
  try {
    return await Promise.race([attempt, deadline])
  } finally {
    clearTimeout(timer)
  }
}
