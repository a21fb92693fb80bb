/** Reads Prometheus text exposition for tests: sums of a metric's samples, and promtool. */
import { spawn } from 'node:child_process';
import { http } from './http.js';

/** The admin listener's /metrics text. */
export async function scrape(adminUrl: string): Promise<string> {
  const r = await http('GET', `${adminUrl}/metrics`);
  if (r.status !== 200) throw new Error(`GET /metrics: ${r.status}`);
  return r.text;
}

/** Sum of every sample of `name` whose label text contains each of `labels` (`host="api"`). */
export function sampleSum(text: string, name: string, ...labels: string[]): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name + '{') && !line.startsWith(name + ' ')) continue;
    const brace = line.indexOf('}');
    const labelText = brace > 0 ? line.slice(name.length, brace + 1) : '';
    if (labels.every((l) => labelText.includes(l))) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** Runs `promtool check metrics` on `text`; resolves with its exit code and output. */
export function promtoolCheck(text: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    p.stdout.on('data', (d: Buffer) => { output += d; });
    p.stderr.on('data', (d: Buffer) => { output += d; });
    p.once('error', reject);
    p.once('exit', (code) => resolve({ code, output }));
    p.stdin.end(text);
  });
}
