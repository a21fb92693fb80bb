/**
 * The growth benchmark names the other processes busy during its reads (bench/process-share.ts):
 * a busy process shows under its group with its share of a CPU, and a process that ended within
 * the window shows through its parent as `<parent>: ended children`. Shares are asserted loosely
 * (at least a third of the CPU time burnt): CI machines are shared.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { ProcessShare } from '../../bench/process-share.js';
import { clockTicks, cpuSeconds, statFields } from '../../bench/procstat.js';

/** Node code that burns `ms` of CPU time (not wall time: the machine may be busy). */
const burn = (ms: number) => `while (process.cpuUsage().user < ${ms * 1000});`;

t.test('a busy process shows under its group, an ended one through its parent', async (t) => {
  const window = new ProcessShare();
  // `sh` runs node in a child, waits for it (reaping it: its time goes to the shell's children's
  // time), then sleeps, so the shell is alive when the window ends and node is not.
  const shell = spawn('sh', ['-c', `"${process.execPath}" -e '${burn(400)}'; sleep 30`], { stdio: 'ignore' });
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
  const ended = share.find((p) => p.process === 'sh: ended children');
  t.ok(ended && ended.cpu_pct >= (0.4 / seconds) * 100 / 3, `the ended child shows through its shell (${ended?.cpu_pct} %)`);
  t.notOk(share.some((p) => p.process === 'sh'), 'the sleeping shell itself takes nothing');
  t.ok(share.every((p, i) => i === 0 || share[i - 1]!.cpu_pct >= p.cpu_pct), 'busiest first');
});
