/**
 * Memory of a server process at one moment: resident memory from /proc/<pid>/status, anonymous
 * (heap, malloc arenas, stacks) and file-backed (mapped files: the LMDB map, the binary and its
 * libraries) apart, and for Slipway the V8 figures from its admin `/metrics` (prom-client's
 * default process metrics plus `slipway_array_buffers_bytes`).
 */
import { readFileSync } from 'node:fs';
import { request } from 'undici';

/** One reading, MiB (1024² bytes); V8 figures null for a server without them. */
export interface MemoryReading {
  rss_mib: number;
  rss_anon_mib: number;
  rss_file_mib: number;
  rss_shmem_mib: number;
  /** Peak RSS since start (VmHWM). */
  rss_peak_mib: number;
  heap_used_mib: number | null;
  external_mib: number | null;
  array_buffers_mib: number | null;
  /**
   * The main thread's V8 spaces, committed (prom-client's `nodejs_heap_space_size_total_bytes`):
   * the young generation (`new`: its two semi-spaces) and the old generation (`old`); null for a
   * server without them.
   */
  young_committed_mib: number | null;
  old_committed_mib: number | null;
  /** Anonymous resident memory by kind of mapping (/proc/<pid>/smaps), see `anonParts`. */
  anon_v8_pages_mib: number;
  anon_malloc_mib: number;
  anon_other_mib: number;
}

/**
 * Anonymous resident memory of `pid` by kind of mapping, bytes: `v8Pages`, V8's heap pages (its
 * 256 KiB anonymous chunks, every isolate's); `malloc`, glibc's arenas and `[heap]` (anonymous
 * maps of 1–64 MiB, thread stacks included: their resident part is small); `other`, the rest.
 */
export function anonParts(pid: number): { v8Pages: number; malloc: number; other: number } {
  const parts = { v8Pages: 0, malloc: 0, other: 0 };
  let kind: keyof typeof parts | null = null;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const map = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (map) {
      const name = map[3]!.trim();
      const kib = (parseInt(map[2]!, 16) - parseInt(map[1]!, 16)) / 1024;
      kind = name === '[heap]' ? 'malloc' : name !== '' ? null : kib === 256 ? 'v8Pages' : kib >= 1024 && kib <= 65536 ? 'malloc' : 'other';
    } else if (kind && line.startsWith('Anonymous:')) parts[kind] += Number(line.split(/\s+/)[1]) * 1024;
  }
  return parts;
}

const mib = (bytes: number): number => Math.round((bytes / 1048576) * 10) / 10;

/** The kB fields of /proc/<pid>/status. */
function status(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of readFileSync(`/proc/${pid}/status`, 'utf8').matchAll(/^(\w+):\s+(\d+) kB$/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

/**
 * One sample's value from Prometheus text (`name{labels} value`, with `labels` exactly as the
 * exposition writes them, e.g. `{space="new"}`; none by default), or null when it is not there.
 */
export function metricSample(text: string, name: string, labels = ''): number | null {
  const escaped = `${name}${labels}`.replace(/[{}.]/g, (c) => `\\${c}`);
  const m = new RegExp(`^${escaped} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : null;
}

/** Reads the memory of `pid`, and its V8 figures from `admin`/metrics when given. */
export async function readMemory(pid: number, admin?: string): Promise<MemoryReading> {
  const s = status(pid);
  let heap: number | null = null, external: number | null = null, buffers: number | null = null;
  let young: number | null = null, old: number | null = null;
  if (admin) {
    const r = await request(`${admin}/metrics`);
    const text = await r.body.text();
    heap = metricSample(text, 'nodejs_heap_size_used_bytes');
    external = metricSample(text, 'nodejs_external_memory_bytes');
    buffers = metricSample(text, 'slipway_array_buffers_bytes');
    young = metricSample(text, 'nodejs_heap_space_size_total_bytes', '{space="new"}');
    old = metricSample(text, 'nodejs_heap_space_size_total_bytes', '{space="old"}');
  }
  const anon = anonParts(pid);
  return {
    anon_v8_pages_mib: mib(anon.v8Pages), anon_malloc_mib: mib(anon.malloc), anon_other_mib: mib(anon.other),
    rss_mib: mib((s.VmRSS ?? NaN) * 1024), rss_anon_mib: mib((s.RssAnon ?? NaN) * 1024), rss_file_mib: mib((s.RssFile ?? NaN) * 1024),
    rss_shmem_mib: mib((s.RssShmem ?? NaN) * 1024), rss_peak_mib: mib((s.VmHWM ?? NaN) * 1024),
    heap_used_mib: heap === null ? null : mib(heap), external_mib: external === null ? null : mib(external), array_buffers_mib: buffers === null ? null : mib(buffers),
    young_committed_mib: young === null ? null : mib(young), old_committed_mib: old === null ? null : mib(old),
  };
}
