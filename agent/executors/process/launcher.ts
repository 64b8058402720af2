// The launcher: one small long-lived helper process that forks tasks' supervisors for the
// agent and tells it when they exit.
//
// Why: starting a child from Node forks the whole Node process (its page tables, its
// threads' memory) and blocks the event loop until the child has exec'd — about 5 ms per
// task in the agent, which caps launches near 150/s and stalls everything else meanwhile.
// Forking a few-megabyte perl costs a fraction of that, off the agent's thread; the agent
// only writes one record to a pipe. perl-base is part of every Debian-family system;
// where perl is missing the executor spawns from Node instead.
//
// Protocol (bytes; no field holds a NUL, as no argv or environment entry can):
//   agent -> launcher   "<length>\n" then id NUL cwd NUL stdout NUL stderr NUL uid NUL gid NUL
//                       resolv NUL k NUL cgroup.procs[0..k) NUL n NUL env[0..n) NUL file NUL
//                       argv0 NUL args...
//                       (uid and gid empty: the child keeps the launcher's user; resolv empty:
//                       the child sees the host's /etc/resolv.conf)
//   launcher -> agent   "started <id> <pid> <start time>\n"   (start time: /proc/PID/stat field 22)
//                       "failed <id> <errno text>\n"          (fork failed)
//                       "exit <pid> <wait status>\n"          (the launcher reaps its children)
// Each child gets its own process group (set by both sides of the fork, so a signal to
// the group right after "started" cannot miss), /dev/null as stdin, and the given files
// appended to as stdout/stderr. If the agent goes away the launcher sees end-of-file and
// exits; the supervisors live on and a restarted agent re-attaches to them.
//
// The child, in this order: enters its working directory (the sandbox) and writes its pid
// into the task's cgroup.procs files while it still has the launcher's (root's) rights, so
// nothing the task runs is ever outside its limits; given a resolv file, enters a mount
// namespace of its own (mounts from the host still reach it; its own go nowhere) and mounts
// that file over /etc/resolv.conf, so every resolver call of the task asks the agent's task
// resolver; then, given a uid and gid, sets its
// groups to the one gid, its gid and its uid, and checks that all took; only then opens its
// stdout and stderr, as the task's user, so a file planted in the sandbox can only ever be
// one that user may write. A failure before the exec exits 125 (cgroup) or 126 (anything
// else), with the reason on the launcher's stderr (the agent's log).

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { constants } from 'node:os';
import type { Logger } from 'pino';

/**
 * Perl: enters a mount namespace of its own (CLONE_NEWNS), makes / and below slave mounts
 * (MS_SLAVE|MS_REC: the host's mounts still reach it, its own go nowhere) and binds `file` over
 * /etc/resolv.conf (MS_BIND). Returns '' when done, else why not. Shared by the launcher's
 * child and probeResolvMount, so the probe tries exactly what a launch does.
 */
const MOUNT_RESOLV_SUB = String.raw`
sub mount_resolv {
  my ($file, $sys_unshare, $sys_mount) = @_;
  return "no mount system calls known here" unless defined $sys_unshare && $sys_unshare ne '';
  # (syscall takes strings by reference: literals would be read-only.)
  my ($none, $root, $target) = ('none', '/', '/etc/resolv.conf');
  syscall($sys_unshare + 0, 0x20000) == 0 or return "cannot enter a mount namespace: $!";
  syscall($sys_mount + 0, $none, $root, 0, 0x84000, 0) == 0 or return "cannot make / a slave mount: $!";
  syscall($sys_mount + 0, $file, $target, 0, 0x1000, 0) == 0 or return "cannot mount $file on /etc/resolv.conf: $!";
  return '';
}
`;

export const LAUNCHER_SCRIPT = String.raw`
use strict; no warnings; use POSIX ();
$| = 1;
my ($SYS_unshare, $SYS_mount) = @ARGV;
${MOUNT_RESOLV_SUB}
my $chld = 0;
$SIG{CHLD} = sub { $chld = 1 };
# Writes a whole line for the agent. The agent's end of stdout is a socket that fills while
# the agent is busy (a burst of launches); a write blocked there is cut short by the next
# SIGCHLD with EINTR and nothing written, as perl's deferred signal handlers are installed
# without SA_RESTART. A single unchecked syswrite then lost "started" and "exit" lines, and
# their tasks stayed STAGING or RUNNING for good. So: write until all of it is out.
sub put {
  my $s = shift;
  while (length $s) {
    my $w = syswrite(STDOUT, $s);
    if (!defined $w) {
      if ($!{EAGAIN}) { my $win = ''; vec($win, fileno(STDOUT), 1) = 1; select(undef, $win, undef, 1); next; }
      next if $!{EINTR};
      return;
    }
    substr($s, 0, $w) = '';
  }
}
sub reap { $chld = 0; while ((my $p = waitpid(-1, POSIX::WNOHANG())) > 0) { put("exit $p $?\n"); } }
sub fail { my ($code, $why) = @_; syswrite(STDERR, "cairn launcher: $why\n"); POSIX::_exit($code); }
sub start_time { my $pid = shift; open(my $f, '<', "/proc/$pid/stat") or return 0; my $s = <$f>; close $f; $s =~ s/^.*\) //s; my @f = split / /, $s; return $f[19] // 0; }
my $buf = '';
while (1) {
  reap() if $chld;
  my $rin = ''; vec($rin, fileno(STDIN), 1) = 1;
  my $n = select(my $rout = $rin, undef, undef, 5);
  reap();
  next if $n <= 0;
  my $r = sysread(STDIN, $buf, 262144, length $buf);
  if (!defined $r) { next if $!{EINTR}; last; }
  last if $r == 0;
  while ($buf =~ /^(\d+)\n/) {
    my ($len, $hl) = ($1, length($1) + 1);
    last if length($buf) < $hl + $len;
    my $rec = substr($buf, $hl, $len); substr($buf, 0, $hl + $len) = '';
    my ($id, $cwd, $out, $err, $uid, $gid, $resolv, $ncg, @rest) = split /\0/, $rec, -1;
    my @cgs = splice(@rest, 0, $ncg);
    my $nenv = shift @rest;
    my @env = splice(@rest, 0, $nenv);
    my ($file, $argv0, @args) = @rest;
    my $pid = fork();
    if (!defined $pid) { my $e = "$!"; $e =~ s/\n/ /g; put("failed $id $e\n"); next; }
    if ($pid == 0) {
      setpgrp(0, 0);
      $SIG{CHLD} = 'DEFAULT';
      chdir($cwd) or fail(126, "cannot enter $cwd: $!");
      for my $cg (@cgs) {
        open(my $f, '>', $cg) or fail(125, "cannot join cgroup $cg: $!");
        defined(syswrite($f, "$$\n")) or fail(125, "cannot join cgroup $cg: $!");
        close($f);
      }
      if ($resolv ne '') {
        my $why = mount_resolv($resolv, $SYS_unshare, $SYS_mount);
        fail(126, $why) if $why ne '';
      }
      if ($uid ne '') {
        $) = "$gid $gid";
        POSIX::setgid($gid);
        POSIX::setuid($uid);
        my @g = split / /, $);
        fail(126, "cannot switch to uid $uid gid $gid: $!") unless $< == $uid && $> == $uid && (split / /, $()[0] == $gid && $g[0] == $gid && (grep { $_ != $gid } @g) == 0;
      }
      open(STDIN, '<', '/dev/null') or POSIX::_exit(126);
      open(STDOUT, '>>', $out) or POSIX::_exit(126);
      open(STDERR, '>>', $err) or POSIX::_exit(126);
      %ENV = map { /^([^=]*)=(.*)$/s ? ($1, $2) : () } @env;
      { exec { $file } $argv0, @args; }
      POSIX::_exit(127);
    }
    setpgrp($pid, $pid);
    put("started $id $pid " . start_time($pid) . "\n");
  }
}
`;

/**
 * unshare(2) and mount(2) by number, for the launcher's perl (which has no wrappers for them);
 * on other machines process tasks keep the host's resolv.conf.
 */
export const MOUNT_SYSCALLS: Partial<Record<string, { unshare: number; mount: number }>> = {
  x64: { unshare: 272, mount: 165 },
  arm64: { unshare: 97, mount: 40 },
};

/**
 * Whether a child of `perl` can do what the launcher does for a resolv file: enter a mount
 * namespace and mount `file` over /etc/resolv.conf there. Undefined when it can; else why not.
 */
export function probeResolvMount(perl: string, file: string): string | undefined {
  const sys = MOUNT_SYSCALLS[process.arch];
  if (!sys) return `no mount system calls known for ${process.arch}`;
  const script = `${MOUNT_RESOLV_SUB}
    my $why = mount_resolv($ARGV[2], $ARGV[0], $ARGV[1]); die "$why\\n" if $why ne '';
    open(my $f, '<', '/etc/resolv.conf') or die "read: $!\\n"; local $/; print <$f>;`;
  const r = spawnSync(perl, ['-e', script, String(sys.unshare), String(sys.mount), file], { encoding: 'utf8', timeout: 10_000 });
  if (r.error) return r.error.message;
  if (r.status !== 0) return (r.stderr || `exit ${r.status}`).trim();
  return r.stdout === readFileSync(file, 'utf8') ? undefined : 'the mounted file did not read back';
}

export interface LaunchRequest {
  cwd: string;
  /** Opened by the child once it runs as the task's user; relative paths are under cwd. */
  stdoutPath: string;
  stderrPath: string;
  /** The user and group to run as; left out, the launcher's own. */
  uid?: number;
  gid?: number;
  /** A file the child mounts over /etc/resolv.conf in a mount namespace of its own (as root, before switching users). */
  resolvConf?: string;
  /** cgroup.procs files the child puts itself into before anything else (and before switching users). */
  cgroupProcs?: readonly string[];
  env: Record<string, string>;
  file: string;
  argv0: string;
  args: string[];
}

export interface LaunchCallbacks {
  /** The process exists, in its own process group. Called synchronously, before its exit can be. */
  onStarted(pid: number, startTimeTicks: number | undefined): void;
  /** It could not be started (fork failed, or the launcher is gone). */
  onFailed(reason: string): void;
  /** It exited; as its parent saw it. */
  onExit(code: number | null, signal: NodeJS.Signals | null): void;
  /** The launcher went away while it ran: its end must be found another way (/proc, its sandbox). */
  onOrphaned(): void;
}

/** Decodes a wait(2) status (pure). */
export function decodeWaitStatus(status: number): { code: number | null; signal: NodeJS.Signals | null } {
  const sig = status & 0x7f;
  if (sig === 0) return { code: (status >> 8) & 0xff, signal: null };
  const name = Object.entries(constants.signals).find(([, n]) => n === sig)?.[0] as NodeJS.Signals | undefined;
  return { code: null, signal: name ?? null };
}

/** Encodes one launch record (pure). Throws on a NUL inside a field. */
export function encodeLaunchRecord(id: number, req: LaunchRequest): Buffer {
  const env = Object.entries(req.env).map(([k, v]) => `${k}=${v}`);
  const ids = req.uid !== undefined && req.gid !== undefined ? [String(req.uid), String(req.gid)] : ['', ''];
  const cgroups = req.cgroupProcs ?? [];
  const fields = [String(id), req.cwd, req.stdoutPath, req.stderrPath, ...ids, req.resolvConf ?? '', String(cgroups.length), ...cgroups, String(env.length), ...env, req.file, req.argv0, ...req.args];
  for (const f of fields) if (f.includes('\0')) throw new Error('a launch field holds a NUL byte');
  const body = Buffer.from(fields.join('\0'), 'utf8');
  return Buffer.concat([Buffer.from(`${body.length}\n`), body]);
}

export class Launcher {
  private child: ChildProcess | undefined;
  private nextId = 1;
  private readonly pendingStart = new Map<number, LaunchCallbacks>();
  private readonly running = new Map<number, LaunchCallbacks>();
  private buffered = '';
  private closed = false;

  constructor(private readonly perl: string, private readonly logger?: Logger) {}

  /** Processes started through the launcher that have not exited yet. */
  get runningCount(): number {
    return this.running.size;
  }

  /** Asks for a process; the callbacks say what became of it. */
  start(req: LaunchRequest, cb: LaunchCallbacks): void {
    if (this.closed) {
      cb.onFailed('the launcher is closed');
      return;
    }
    let record: Buffer;
    const id = this.nextId++;
    try {
      record = encodeLaunchRecord(id, req);
    } catch (err) {
      cb.onFailed((err as Error).message);
      return;
    }
    const child = this.ensureChild();
    this.pendingStart.set(id, cb);
    child.stdin!.write(record);
  }

  /** Stops the launcher (its children live on); callbacks of running processes get onOrphaned. */
  close(): void {
    this.closed = true;
    const child = this.child;
    this.child = undefined;
    if (child) {
      child.removeAllListeners('exit');
      child.stdout?.removeAllListeners('data');
      child.stdin?.end();
      child.unref();
      (child.stdout as unknown as { unref?: () => void } | null)?.unref?.();
    }
    this.orphanAll('the agent is stopping');
  }

  private ensureChild(): ChildProcess {
    if (this.child) return this.child;
    const sys = MOUNT_SYSCALLS[process.arch];
    const child = spawn(this.perl, ['-e', LAUNCHER_SCRIPT, ...(sys ? [String(sys.unshare), String(sys.mount)] : [])], {
      // Its own process group: a Ctrl-C meant for the agent in a terminal must not end it.
      detached: true,
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.child = child;
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (text: string) => this.onData(text));
    child.stdin!.on('error', () => undefined); // 'exit' says what happened
    child.on('error', (err) => this.logger?.error({ err: err.message }, 'task launcher error'));
    child.once('exit', (code, signal) => {
      if (this.child !== child) return;
      this.child = undefined;
      this.buffered = '';
      this.logger?.error({ code, signal }, 'the task launcher exited; its tasks are watched through /proc, and a new launcher starts with the next launch');
      for (const [, cb] of this.pendingStart) cb.onFailed('the task launcher exited');
      this.pendingStart.clear();
      this.orphanAll('the task launcher exited');
    });
    return child;
  }

  private orphanAll(why: string): void {
    const orphans = [...this.running.values()];
    this.running.clear();
    for (const cb of this.pendingStart.values()) cb.onFailed(why);
    this.pendingStart.clear();
    for (const cb of orphans) cb.onOrphaned();
  }

  private onData(text: string): void {
    this.buffered += text;
    let nl: number;
    while ((nl = this.buffered.indexOf('\n')) >= 0) {
      const line = this.buffered.slice(0, nl);
      this.buffered = this.buffered.slice(nl + 1);
      this.onLine(line);
    }
  }

  private onLine(line: string): void {
    const [kind, a, b, c] = line.split(' ');
    if (kind === 'started') {
      const cb = this.pendingStart.get(Number(a));
      if (!cb) return;
      this.pendingStart.delete(Number(a));
      const pid = Number(b);
      this.running.set(pid, cb);
      const start = Number(c);
      cb.onStarted(pid, Number.isInteger(start) && start > 0 ? start : undefined);
    } else if (kind === 'exit') {
      const pid = Number(a);
      const cb = this.running.get(pid);
      if (!cb) return;
      this.running.delete(pid);
      const end = decodeWaitStatus(Number(b));
      cb.onExit(end.code, end.signal);
    } else if (kind === 'failed') {
      const cb = this.pendingStart.get(Number(a));
      if (!cb) return;
      this.pendingStart.delete(Number(a));
      cb.onFailed(`fork failed: ${line.split(' ').slice(2).join(' ')}`);
    } else if (line.trim() !== '') {
      this.logger?.warn({ line }, 'unexpected line from the task launcher');
    }
  }
}
