/**
 * Child process entry (server/http/tls.ts): generates one self-signed certificate with the
 * `selfsigned` library and writes it. In a process of its own so that the library and the
 * certificate code it loads (about 0.8 MB of JavaScript) never enter the server's memory:
 * measured on Node 24, a first start that generated its certificate on the main thread kept
 * ~10 MiB more resident memory for the life of the process than a start that found one, and on a
 * worker thread ~19 MiB (the thread's freed memory stays with the process's allocator).
 *
 * argv[2]: JSON `{ attrs, options, keyFile, certFile }`: selfsigned's `generate(attrs, options)`,
 * with `options.notAfterDate` as an ISO 8601 string; the key is written mode 0600, the
 * certificate 0644. Exits 0 once both are written; anything else is a failure, on stderr.
 */
import { writeFileSync } from 'node:fs';
import { generate } from 'selfsigned';

type Args = Parameters<typeof generate>;
const job = JSON.parse(process.argv[2]!) as { attrs: Args[0]; options: Args[1] & { notAfterDate: string }; keyFile: string; certFile: string };
const pems = await generate(job.attrs, { ...job.options, notAfterDate: new Date(job.options.notAfterDate) });
writeFileSync(job.keyFile, pems.private, { mode: 0o600 });
writeFileSync(job.certFile, pems.cert, { mode: 0o644 });
