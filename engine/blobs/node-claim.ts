/**
 * One running node per node name (engine/blobs/node-name.ts). Two nodes started with the same
 * `SLIPWAY_NODE_NAME` on one database would each take the other's upload sessions for their own:
 * start-up recovery and the reaper of one would abort the sessions the other is receiving. So a
 * node holds, for as long as it runs, the store's exclusive lock `node-<hash of its name>`
 * (MetadataStore.exclusive: a PostgreSQL session-level advisory lock on a connection of its own,
 * released by the database when the node's process or connection ends, so a node killed with
 * SIGKILL and started again gets its name back at once). A node that finds the lock held refuses
 * to start, naming the setting.
 *
 * When the lock's connection breaks while the node runs (a database restart), the node claims
 * its name again every `RECLAIM_EVERY_MS` until it has it; if another node took the name
 * meanwhile, every attempt logs the conflict (the operator must rename one of them).
 */
import { createHash } from 'node:crypto';
import type { MetadataStore } from '../storage/metadata.js';

/** How often a node whose name lock was lost claims it again (ms). */
export const RECLAIM_EVERY_MS = 2_000;

/** Another running node holds this node's name. */
export class NodeNameTakenError extends Error {
  constructor(readonly node: string) {
    super(`another running node uses the node name "${node}" on this metadata database: every node needs its own SLIPWAY_NODE_NAME (default: the first label of the host name)`);
    this.name = 'NodeNameTakenError';
  }
}

/** The exclusive-lock name of node name `node` (lock names are `[a-z0-9-]`, node names are not). */
export function nodeLockName(node: string): string {
  return `node-${createHash('sha256').update(node).digest('hex').slice(0, 40)}`;
}

/** A held node name. */
export interface NodeClaim {
  /** Gives the name up (stops re-claiming); resolves once the lock is released. */
  release(): Promise<void>;
}

/**
 * Claims `node` for this process for as long as it runs (see the top of this file).
 * @param report called when the lock was lost or could not be taken back (for the log); never throws
 * @throws NodeNameTakenError when another running node holds the name; StoreUnavailableError when
 *         the store cannot be asked.
 */
export async function claimNodeName(metadata: MetadataStore, node: string, report: (what: 'lost' | 'taken' | 'reclaimed', err?: unknown) => void): Promise<NodeClaim> {
  const lock = nodeLockName(node);
  let released = false;
  let letGo = () => {};
  let holding: Promise<unknown> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;

  /** Takes the lock; resolves true once held (the hold continues in `holding`), false when another holds it. */
  const take = () => new Promise<boolean>((resolve, reject) => {
    const stop = new Promise<void>((r) => { letGo = r; });
    holding = metadata.exclusive(lock, async (signal) => {
      resolve(true);
      await Promise.race([stop, new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }))]);
      if (signal.aborted && !released) {
        report('lost', signal.reason);
        schedule();
      }
    }).then((o) => { if (!o.ran) resolve(false); }, reject);
  });
  const schedule = () => {
    if (released) return;
    timer = setTimeout(() => {
      take().then((held) => {
        if (held) report('reclaimed');
        else { report('taken'); schedule(); }
      }, (e) => { report('lost', e); schedule(); });
    }, RECLAIM_EVERY_MS);
    timer.unref();
  };

  if (!(await take())) throw new NodeNameTakenError(node);
  return {
    async release() {
      released = true;
      clearTimeout(timer);
      letGo();
      await holding.catch(() => {});
    },
  };
}
