/**
 * Compares two V8 heap snapshots (written by the growth benchmark's `--heap-snapshots`, or by
 * any `node --heapsnapshot-signal` process) to find what grew between them:
 *
 *   node dist/bench/growth/heap-diff.js <earlier.heapsnapshot> <later.heapsnapshot> [rows]
 *
 * Prints, largest growth first, the self size (bytes) and count of objects by constructor (node
 * type and name), and the ArrayBuffer backing stores (external memory, not in the V8 heap) by
 * what holds them: the chain of the two nearest retainers of each ArrayBuffer's view (for a
 * Buffer: the object property or Map that keeps it), with their count and bytes.
 */
import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** Per-key totals: bytes and count. */
type Totals = Map<string, { bytes: number; count: number }>;

function add(t: Totals, key: string, bytes: number): void {
  const e = t.get(key);
  if (e) { e.bytes += bytes; e.count++; } else t.set(key, { bytes, count: 1 });
}

/** Self sizes by constructor, and ArrayBuffer backing stores by their holders. */
function analyse(path: string): { byConstructor: Totals; buffers: Totals } {
  const s = JSON.parse(readFileSync(path, 'utf8')) as Snapshot;
  const nf = s.snapshot.meta.node_fields, ef = s.snapshot.meta.edge_fields;
  const N = nf.length, E = ef.length;
  const types = s.snapshot.meta.node_types[0], etypes = s.snapshot.meta.edge_types[0];
  const iType = nf.indexOf('type'), iName = nf.indexOf('name'), iSize = nf.indexOf('self_size'), iEdges = nf.indexOf('edge_count');
  const eType = ef.indexOf('type'), eName = ef.indexOf('name_or_index'), eTo = ef.indexOf('to_node');
  const count = s.nodes.length / N;
  const firstEdge = new Uint32Array(count + 1);
  for (let i = 0, e = 0; i < count; i++) { firstEdge[i] = e; e += s.nodes[i * N + iEdges]! * E; firstEdge[i + 1] = e; }
  // Reverse edges: for each node, its retainers (node index and edge name).
  const retainers: Array<Array<[number, string]>> = Array.from({ length: count }, () => []);
  const name = (i: number) => s.strings[s.nodes[i * N + iName]!]!;
  const type = (i: number) => types[s.nodes[i * N + iType]!]!;
  for (let i = 0; i < count; i++) {
    for (let e = firstEdge[i]!; e < firstEdge[i + 1]!; e += E) {
      const et = etypes[s.edges[e + eType]!]!;
      if (et === 'weak' || et === 'shortcut') continue;
      const to = s.edges[e + eTo]! / N;
      const raw = et === 'element' || et === 'hidden' ? '' : s.strings[s.edges[e + eName]!]!;
      // Indices (array elements, a Map's table slots) would make every holder a key of its own.
      const en = raw === '' || /^\d+$/.test(raw) ? '[]' : raw;
      retainers[to]!.push([i, en]);
    }
  }
  const byConstructor: Totals = new Map();
  const buffers: Totals = new Map();
  const label = (i: number) => `${type(i) === 'object' ? '' : type(i) + ':'}${name(i).slice(0, 40)}`;
  for (let i = 0; i < count; i++) {
    add(byConstructor, `${type(i)} ${name(i).slice(0, 60)}`, s.nodes[i * N + iSize]!);
    if (name(i) !== 'system / JSArrayBufferData') continue;
    // backing store ← ArrayBuffer ← view (Buffer) ← holder ← holder's holder
    const chain: string[] = [];
    let at = i;
    for (let depth = 0; depth < 6; depth++) {
      const r = retainers[at]!.find(([from]) => type(from) !== 'synthetic' && !name(from).startsWith('system /')) ?? retainers[at]![0];
      if (!r) break;
      chain.push(`${label(r[0])}.${r[1]}`);
      at = r[0];
    }
    add(buffers, chain.slice(1).join(' ← ') || '(no retainer)', s.nodes[i * N + iSize]!);
  }
  return { byConstructor, buffers };
}

function diff(a: Totals, b: Totals, rows: number, title: string): void {
  const keys = new Set([...a.keys(), ...b.keys()]);
  const out = [...keys].map((k) => {
    const x = a.get(k) ?? { bytes: 0, count: 0 }, y = b.get(k) ?? { bytes: 0, count: 0 };
    return { k, d: y.bytes - x.bytes, dc: y.count - x.count, y };
  }).sort((p, q) => q.d - p.d || q.y.bytes - p.y.bytes).slice(0, rows);
  console.log(`\n${title}\n${'Δ bytes'.padStart(12)} ${'Δ count'.padStart(9)} ${'bytes (later)'.padStart(14)} ${'count'.padStart(8)}  what`);
  for (const r of out) console.log(`${String(r.d).padStart(12)} ${String(r.dc).padStart(9)} ${String(r.y.bytes).padStart(14)} ${String(r.y.count).padStart(8)}  ${r.k}`);
}

const [earlier, later, rows = '25'] = process.argv.slice(2);
if (!earlier || !later) {
  console.error('usage: heap-diff <earlier.heapsnapshot> <later.heapsnapshot> [rows]');
  process.exit(2);
}
const a = analyse(earlier), b = analyse(later);
diff(a.byConstructor, b.byConstructor, Number(rows), 'V8 heap, self size by constructor');
diff(a.buffers, b.buffers, Number(rows), 'ArrayBuffer backing stores (external memory) by holder: view ← holder ← holder');
