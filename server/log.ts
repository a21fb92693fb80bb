/**
 * Structured JSON logging with pino. Credentials never reach the log: request lines carry the
 * path without its query (upload capabilities travel in `_state`), and known secret fields are
 * redacted.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'slipway' },
    redact: { paths: ['password', 'token', 'apiKey', 'secret', '*.password', '*.token', '*.secret', 'authorization'], censor: '[redacted]' },
  });
}
