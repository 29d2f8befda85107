/**
 * The public shapes of the SMTP source: what a mailbox check answers, the reply it read, and the source contract the
 * email lookup uses (`ctx.sources.smtp`).
 */

/** Outcome of one mailbox check, as the email lookup reports it in `smtp_check` (minus `skipped`). */
export type SmtpOutcome = 'deliverable' | 'undeliverable' | 'catch_all' | 'unknown' | 'unavailable'

/** Result of {@link SmtpSource.verify}. */
export interface SmtpVerifyResult {
  /**
   * `deliverable` / `undeliverable` / `catch_all`: a server answered RCPT TO definitely. `unknown`: a server answered
   * but not definitely (greylisting, a policy block, 421, refused at the greeting). `unavailable`: no server answered
   * about the mailbox — none could be reached, or those reached stopped answering (time-out, hang-up, the lookup's
   * time budget ran out) before they replied to RCPT TO.
   */
  smtp_check: SmtpOutcome
  /** The SMTP reply code that decided the outcome, or null when none (connection failure, timeout). */
  code: number | null
  /** The enhanced status code (RFC 3463, e.g. `5.1.1`) of that reply, or null. */
  enhancedCode: string | null
  /** The reply text (or a description of the failure); for people, never parsed by callers. */
  message: string
  /** The MX host that answered, or null when none did. */
  mxHost: string | null
  /** Whether the domain accepts any local part: true/false when probed (or known), null when not known. */
  catchAll: boolean | null
}

/** Counters of an SMTP source (monotonic). */
export interface SmtpStats {
  /** TCP connections established to mail servers (through a proxy or not). */
  connectionsOpened: number
  /** Connection attempts that failed (refused, timeout, unresolvable host, proxy failure). */
  connectionsFailed: number
  /** Times an already open session served another address. */
  sessionsReused: number
  /** Sessions closed early because of rejected recipients (strict servers slow down and hang up after a few). */
  sessionsRenewed: number
  /** Recipients retried on a new connection after a `421` in the middle of a session. */
  retriesAfter421: number
  /**
   * Connections a server refused at the greeting with a 4xx ("too many connections from that IP address") while
   * another session to it was open — its limit was lowered to the sessions it had accepted, and the address waited
   * for one of them — or just after our last one closed (tried again after a short pause: it still counted that one).
   */
  connectionsRefusedAsBusy: number
  /** Mailbox checks cut short by their time budget (`totalTimeoutMs`). */
  budgetExceeded: number
  /** SMTP commands written (EHLO, HELO, MAIL, RCPT, RSET, QUIT). */
  commandsSent: number
  /** Catch-all probes sent (RCPT TO a random local part). */
  catchAllProbes: number
  /** Addresses whose catch-all answer came from the per-domain cache (or a probe already running). */
  catchAllCacheHits: number
  /** verify() calls. */
  verifications: number
}

/** The SMTP source contract. */
export interface SmtpSource {
  /**
   * Checks one mailbox. `address` must already be syntax-checked with its domain in ASCII (punycode);
   * `mxHosts` are tried in the given order (sort by preference first). Never rejects.
   */
  verify(address: string, mxHosts: string[]): Promise<SmtpVerifyResult>
  /** Counters so far. */
  stats(): SmtpStats
  /**
   * Ends every check in flight (they answer `unavailable`), sends QUIT on idle sessions and drops busy ones, and
   * resolves once every socket is closed and every timer cleared. Later verify() calls answer `unavailable`.
   */
  close(): Promise<void>
}

/** One parsed SMTP reply. */
export interface SmtpReply {
  code: number
  enhancedCode: string | null
  /** The text of every line, enhanced code stripped, joined with a space. */
  text: string
}

/** How a reply to RCPT TO reads. */
export type SmtpReplyClass =
  /** 250/251: the server takes mail for the address */
  | 'accepted'
  /** 5xx saying the mailbox does not exist or is disabled */
  | 'no_mailbox'
  /** 5xx or 4xx about us (IP blocked, listed, policy, rate limit, relaying, reverse DNS …), not the mailbox */
  | 'blocked'
  /** 4xx: try later (greylisting, local error, mailbox busy/full) */
  | 'temporary'
  /** any other 5xx: permanent but not clearly about the mailbox */
  | 'rejected_other'

/** A warning about this host or network (the riskcheck warning channel's shape). */
export interface SmtpWarning {
  /** `smtp_port_blocked`: mail servers cannot be reached from here; `smtp_proxy_failed`: the SOCKS5 proxy cannot be used. */
  code: 'smtp_port_blocked' | 'smtp_proxy_failed'
  message: string
}
