// `npm run bench -- raft-core`: what the Raft core and its SQLite storage cost, without a
// network. (The three-process figures the issue asks for — commit latency on loopback,
// throughput with 64 clients, failover time — belong to `bench/raft.ts` with the transport.)
//  - core: three nodes in one process over memory, messages handed over directly; 64
//    proposals per round (what 64 concurrent clients give one event-loop turn); committed
//    commands per second and Ready cycles per commit.
//  - sqlite: one node persisting every Ready to SQLite (WAL, synchronous=FULL: one fsync
//    per Ready) at batch sizes 1 and 64; commits per second and save() latency.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RaftNode } from '../shared/raft/node.ts';
import { MemoryStorage } from '../shared/raft/memory-storage.ts';
import { SeededRandom } from '../shared/random.ts';
import { SqliteRaftStorage } from '../shared/raft/sqlite-storage.ts';
import type { Message } from '../shared/raft/types.ts';

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function coreThroughput(total: number, batch: number): { commandsPerSecond: number; readyCyclesPerCommand: number } {
  const ids = [1, 2, 3];
  const storages = ids.map(() => {
    const s = new MemoryStorage();
    s.bootstrap(ids);
    return s;
  });
  const nodes = ids.map((id, i) => new RaftNode({ id, random: new SeededRandom(id) }, storages[i]));
  let cycles = 0;
  let applied = 0;
  const pump = () => {
    for (;;) {
      const out: Message[] = [];
      for (const [i, n] of nodes.entries()) {
        while (n.hasReady()) {
          const rd = n.ready();
          cycles++;
          if (rd.snapshot) storages[i].applySnapshot(rd.snapshot);
          storages[i].append(rd.entries);
          if (rd.hardState) storages[i].setHardState(rd.hardState);
          out.push(...rd.messages);
          if (i === 0) applied += rd.committedEntries.filter((e) => e.data.length > 0).length;
          n.advance();
        }
      }
      if (out.length === 0) return;
      for (const m of out) nodes[m.to - 1].step(m);
    }
  };
  nodes[0].campaign();
  pump();
  const payload = new Uint8Array(128);
  const started = performance.now();
  let proposed = 0;
  while (applied < total) {
    for (let i = 0; i < batch && proposed < total; i++, proposed++) nodes[0].propose(payload);
    pump();
    // Keep the logs short, as a real master would with snapshots.
    if (proposed % 10_000 === 0) {
      for (const [i, s] of storages.entries()) {
        const idx = nodes[i].status().applied;
        s.createSnapshot(idx, { voters: ids, learners: [] }, new Uint8Array());
        s.compact(idx);
      }
    }
  }
  const seconds = (performance.now() - started) / 1000;
  return { commandsPerSecond: Math.round(total / seconds), readyCyclesPerCommand: Math.round((cycles / total) * 1000) / 1000 };
}

function sqliteThroughput(rounds: number, batch: number): { commandsPerSecond: number; saveP50Ms: number; saveP99Ms: number } {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-raft-bench-'));
  try {
    const s = new SqliteRaftStorage(join(dir, 'raft.sqlite'));
    s.bootstrap([1]);
    const n = new RaftNode({ id: 1, random: new SeededRandom(1) }, s);
    const saves: number[] = [];
    const drain = () => {
      while (n.hasReady()) {
        const rd = n.ready();
        const t = performance.now();
        s.save(rd);
        saves.push(performance.now() - t);
        n.advance();
      }
    };
    n.campaign();
    drain();
    const payload = new Uint8Array(128);
    const started = performance.now();
    for (let r = 0; r < rounds; r++) {
      for (let i = 0; i < batch; i++) n.propose(payload);
      drain();
    }
    const seconds = (performance.now() - started) / 1000;
    saves.sort((a, b) => a - b);
    s.close();
    return {
      commandsPerSecond: Math.round((rounds * batch) / seconds),
      saveP50Ms: Math.round(percentile(saves, 50) * 1000) / 1000,
      saveP99Ms: Math.round(percentile(saves, 99) * 1000) / 1000,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(): Promise<unknown> {
  return {
    bench: 'raft-core',
    core3Nodes: {
      batch1: coreThroughput(20_000, 1),
      batch64: coreThroughput(200_000, 64),
    },
    sqliteOneNode: {
      batch1: sqliteThroughput(300, 1),
      batch64: sqliteThroughput(300, 64),
    },
  };
}
