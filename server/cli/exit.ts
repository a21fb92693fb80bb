/**
 * Ending the `slipway` process without losing output. `process.exit` ends the process at once:
 * whatever is still queued on stdout or stderr is dropped when they are pipes (Node writes to
 * pipes asynchronously on POSIX; to files and terminals synchronously), so a large `--json`
 * report piped to another program was cut short. Every exit of the CLI goes through here.
 */

/** Resolves once everything written to `stream` so far has been handed to the OS. */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  // A write's callback runs after every earlier write has been flushed (stream order);
  // a stream already closed (EPIPE: the reader went away) has nothing left to wait for.
  if (stream.destroyed || stream.writableEnded) return Promise.resolve();
  return new Promise((resolve) => {
    stream.once('error', () => resolve());
    stream.write('', () => resolve());
  });
}

/**
 * Exits with `code` once stdout and stderr have drained (never sooner: see above).
 * Returns a promise that never resolves, so callers can `await` it as their last step.
 */
export async function exitWhenFlushed(code: number): Promise<never> {
  process.exitCode = code;
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  process.exit(code);
}
