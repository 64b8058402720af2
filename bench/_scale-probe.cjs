// Preloaded into the scale bench's master processes (NODE_OPTIONS=--require this file) so the
// bench can read what only the process itself knows: heap and RSS after a full GC, event-loop
// utilization and delay, and (optionally) a CPU profile. The masters expose none of this on
// /metrics. It also ends the master when the bench process is gone. Nothing runs until the bench asks: on SIGUSR2 the probe reads
// `$CAIRN_SCALE_PROBE_DIR/<pid>.req` ({seq, gc?, profile?: 'start'|'stop'}) and answers in
// `<pid>.json` (written whole, then renamed). Without the variable the probe does nothing.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const v8 = require('node:v8');
const vm = require('node:vm');
const { performance, monitorEventLoopDelay } = require('node:perf_hooks');

const dir = process.env.CAIRN_SCALE_PROBE_DIR;
if (dir) {
  // The bench cleans up after itself, but a bench that dies outright (killed, out of memory)
  // cannot: a master whose parent is gone exits too.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) process.exit(1);
  }, 1000).unref();
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  let session;
  const answer = (out) => {
    const file = path.join(dir, `${process.pid}.json`);
    fs.writeFileSync(`${file}.tmp`, JSON.stringify(out));
    fs.renameSync(`${file}.tmp`, file);
  };
  process.on('SIGUSR2', () => {
    let req = {};
    try {
      req = JSON.parse(fs.readFileSync(path.join(dir, `${process.pid}.req`), 'utf8'));
    } catch {
      // no request file: answer with what there is
    }
    const out = { seq: req.seq ?? 0, atMs: Date.now() };
    if (req.gc) {
      const t0 = performance.now();
      gc();
      gc();
      out.gcMs = performance.now() - t0;
    }
    out.memory = process.memoryUsage();
    const elu = performance.eventLoopUtilization();
    out.elu = { idleMs: elu.idle, activeMs: elu.active };
    out.loopDelayMs = { p50: delay.percentile(50) / 1e6, p99: delay.percentile(99) / 1e6, max: delay.max / 1e6 };
    delay.reset();
    if (req.profile === 'start' && !session) {
      const inspector = require('node:inspector');
      session = new inspector.Session();
      session.connect();
      session.post('Profiler.enable', () => session.post('Profiler.setSamplingInterval', { interval: 1000 }, () => session.post('Profiler.start', () => answer(out))));
      return;
    }
    if (req.profile === 'stop' && session) {
      const s = session;
      session = undefined;
      s.post('Profiler.stop', (err, res) => {
        if (!err && res) fs.writeFileSync(path.join(dir, `${process.pid}.cpuprofile`), JSON.stringify(res.profile));
        s.disconnect();
        answer(out);
      });
      return;
    }
    answer(out);
  });
}
