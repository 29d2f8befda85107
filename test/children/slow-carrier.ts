/** The carrier answer of the slow carrier source the bulk queue tests use (in the test and in its child process). */
import type { LiveCarrierRecord } from '../../src/sources/phone/carrier-source.js'

export const MOBILE_RECORD: LiveCarrierRecord = {
  lineType: 'mobile',
  carrierType: 'mobile',
  carrierName: 'Example Wireless',
  ocn: null,
  mcc: null,
  mnc: null,
  ported: false,
  originalCarrier: null,
  lrn: null,
  lata: null,
  rateCenter: null,
}
