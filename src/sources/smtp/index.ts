/**
 * The SMTP mailbox check's source (`ctx.sources.smtp`): see {@link createSmtpSource}. The modules beside this file
 * are its parts — reply reading and classification (pure), a session over any Duplex stream, the session pool keyed
 * by route and mail-server address, TTL caches, connectors (direct or SOCKS5), the blocked-port detector.
 */
export { createSmtpSource } from './source.js'
export type { SmtpSourceOptions } from './source-options.js'
export { createDnsHostResolver, type ResolveHost } from './resolve-host.js'
export { classifyRcptReply } from './classify.js'
export { parseSmtpProxies, parseSmtpProxyUrl, type SmtpProxy } from './proxy.js'
export { SMTP_DEFAULTS } from './defaults.js'
export type { SmtpOutcome, SmtpReply, SmtpReplyClass, SmtpSource, SmtpStats, SmtpVerifyResult, SmtpWarning } from './types.js'
