/**
 * Structured JSON logging with pino. Credentials never reach the log: request lines carry the
 * path without its query (upload capabilities travel in `_state`), and known secret fields are
 * redacted.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * A pino logger at `level`, writing to `file` (appended, created if needed) or to stdout.
 */
export function createLogger(level: string, file?: string): Logger {
  return pino({
    level,
    base: { service: 'slipway' },
    redact: { paths: ['password', 'token', 'apiKey', 'secret', '*.password', '*.token', '*.secret', 'authorization'], censor: '[redacted]' },
  }, file ? pino.destination({ dest: file, mkdir: true, sync: true }) : undefined);
}

/**
 * The logger of start-up and shutdown lines (listening, the bootstrap notice, signals, drain,
 * a failed start): JSON lines like every other, at `info` and above whatever SLIPWAY_LOG_LEVEL
 * says (`warn` would otherwise hide where the server listens), except `silent`.
 */
export function lifecycleLogger(log: Logger): Logger {
  return log.level === 'silent' || log.levelVal <= log.levels.values.info! ? log : log.child({}, { level: 'info' });
}
