/**
 * Defaults of the SMTP mailbox check, defined once: the SMTP source, `createRiskcheck` options, the CLI help and
 * docs/options.md all use these.
 */
export const SMTP_DEFAULTS = {
  /** Port of the receiving mail servers. */
  port: 25,
  /** Name sent with EHLO/HELO (set it to a name whose address is your sending host's). */
  heloName: 'riskcheck.invalid',
  /** Timeout of the TCP connect and of every reply, in ms. */
  timeoutMs: 10_000,
  /** Time budget of one mailbox check, all MX hosts together (waiting for a connection, connects, replies), in ms. */
  totalTimeoutMs: 15_000,
  /** Sessions at once per mail-server IP address (per proxy). */
  maxConnectionsPerHost: 2,
  /**
   * Rejected recipients after which a session is closed and a fresh one opened. Postfix slows every reply down after
   * 10 errors in a session (`smtpd_soft_error_limit`) and hangs up after 20 (`smtpd_hard_error_limit`).
   */
  maxRejectionsPerSession: 5,
  /**
   * Recipients (catch-all probes included) after which a session is renewed. Postfix starts counting RSET as an error
   * after 100 of them (`smtpd_junk_command_limit`); one RSET is sent per address.
   */
  maxRecipientsPerSession: 50,
  /** An idle session is closed after this many ms. */
  idleMs: 10_000,
  /** Most MX hosts tried per address. */
  maxMxHosts: 3,
  /** How long a domain's catch-all answer is kept, in ms. */
  catchAllTtlMs: 600_000,
  /** How long a server that could not be reached, or refused us at the greeting, is not asked again, in ms. */
  hostFailureTtlMs: 30_000,
  /**
   * How long a mail server's own connection limit is kept, in ms: learned when it refuses an extra connection with a
   * 4xx at the greeting (Exim's `smtp_accept_max_per_host`) while another session to it is open.
   */
  connectionLimitTtlMs: 600_000,
  /** Domains whose every mail server was unreachable before a blocked port is reported (with no successful connect). */
  portBlockedAfterDomains: 3,
} as const
