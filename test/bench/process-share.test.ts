/**
 * The growth benchmark names the other processes busy during its reads (bench/process-share.ts):
 * a busy process shows under its group with its share of a CPU, and a process that ended within
 * the window shows through its parent as `<parent>: ended children`. Shares are asserted loosely
 * (at least a third of the CPU time burnt): CI machines are shared.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessShare } from '../../bench/process-share.js';
import { clockTicks, cpuSeconds, statFields } from '../../bench/procstat.js';

/** Node code that burns `ms` of CPU time (not wall time: the machine may be busy). */
const burn = (ms: number) => `while (process.cpuUsage().user < ${ms * 1000});`;

t.test('a busy process shows under its group, an ended one through its parent', async (t) => {
  // The shell runs under a name of its own (a link to `sh`; a process's command name is the name
  // it was started by), so that no other `sh` on a shared CI machine lands in its group.
  const dir = mkdtempSync(join(tmpdir(), 'process-share-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const shellPath = join(dir, 'pshare-shell');
  symlinkSync('/bin/sh', shellPath);
  const window = new ProcessShare();
  // The shell runs node in a child, waits for it (reaping it: its time goes to the shell's
  // children's time), then sleeps, so the shell is alive when the window ends and node is not.
  const shell = spawn(shellPath, ['-c', `"${process.execPath}" -e '${burn(400)}'; sleep 30`], { stdio: 'ignore' });
  const busy = spawn(process.execPath, ['-e', `${burn(1500)}; setInterval(() => {}, 1000)`], { stdio: 'ignore' });
  t.teardown(() => { shell.kill('SIGKILL'); busy.kill('SIGKILL'); });
  // Until the busy child has burnt its 1.5 s and the shell has reaped its child, read through /proc.
  const reaped = () => { const f = statFields(`/proc/${shell.pid}/stat`); return (Number(f[13]) + Number(f[14])) / clockTicks(); };
  const started = performance.now();
  while ((cpuSeconds(busy.pid!) < 1.4 || reaped() < 0.35) && performance.now() - started < 30_000) await new Promise((r) => setTimeout(r, 50));
  const seconds = (performance.now() - started) / 1000;
  const share = window.end(20);
  t.comment(JSON.stringify(share));
  const node = share.find((p) => p.process === 'node');
  t.ok(node && node.cpu_pct >= (1.4 / seconds) * 100 / 3, `node shows with its share (${node?.cpu_pct} % over ${seconds.toFixed(1)} s)`);
  const ended = share.find((p) => p.process === 'pshare-shell: ended children');
  t.ok(ended && ended.cpu_pct >= (0.4 / seconds) * 100 / 3, `the ended child shows through its shell (${ended?.cpu_pct} %)`);
  // The shell's own time is a few clock ticks of start-up (each tick is 10 ms, about 0.5 % of the
  // window); its child's 400 ms are not the shell's.
  const own = share.find((p) => p.process === 'pshare-shell')?.cpu_pct ?? 0;
  t.ok(own < 5, `the sleeping shell itself takes almost nothing (${own} %)`);
  t.ok(share.every((p, i) => i === 0 || share[i - 1]!.cpu_pct >= p.cpu_pct), 'busiest first');
});
