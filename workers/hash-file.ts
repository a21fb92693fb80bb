/** Worker task: sha256 of a file, streamed (upload sessions whose hash state was lost). */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';

export async function hashFile(path: string): Promise<{ digest: string; size: number }> {
  const h = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 4 * 1024 * 1024 })) {
    h.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { digest: 'sha256:' + h.digest('hex'), size };
}
