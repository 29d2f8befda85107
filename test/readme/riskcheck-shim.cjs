// `require('riskcheck')` as the README's CommonJS block sees it when it runs as a test (`node --require` this file):
// the installed package itself, except that `createRiskcheck()` answers in test mode (no network; the documented
// deterministic answers), as ./riskcheck-shim.ts does for the ESM blocks.
const Module = require('node:module')

const load = Module._load
Module._load = function (request, parent, isMain) {
  const m = load.call(this, request, parent, isMain)
  if (request !== 'riskcheck') return m
  return { ...m, createRiskcheck: (options = {}) => m.createRiskcheck({ mode: 'test', now: () => new Date('2026-11-22T00:00:00Z'), ...options }) }
}
