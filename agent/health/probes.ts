// The checks themselves, one attempt each: an HTTP GET, a TCP connect, a shell command (in
// the task's sandbox, environment and user) or a command run in the task's container
// (`docker exec`). Each resolves to an outcome and never throws or rejects: whatever goes
// wrong is the check's failure, never the agent's. An aborted check stops what it started.

import { spawn } from 'node:child_process';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type Docker from 'dockerode';

export type ProbeOutcome = { ok: true } | { ok: false; error: string };

/** Output of a failed command kept for its message: enough to say why, small enough to send. */
const MAX_OUTPUT_CHARS = 512;

function aborted(signal: AbortSignal): ProbeOutcome {
  return { ok: false, error: signal.reason instanceof Error ? signal.reason.message : 'aborted' };
}

/** Healthy on 200-399, or on one of `statuses` when given (Mesos' rule). */
export function httpStatusHealthy(status: number, statuses: readonly number[]): boolean {
  return statuses.length > 0 ? statuses.includes(status) : status >= 200 && status < 400;
}

export function probeHttp(target: { port: number; path: string; scheme: 'http' | 'https'; statuses: readonly number[] }, signal: AbortSignal): Promise<ProbeOutcome> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(aborted(signal));
    const get = target.scheme === 'https' ? https.get : http.get;
    // No pooled sockets (a check must open its own connection) and, as in Mesos, no
    // certificate check: the task's certificate names its service, not 127.0.0.1.
    const req = get({ host: '127.0.0.1', port: target.port, path: target.path, agent: false, signal, rejectUnauthorized: false, headers: { 'user-agent': 'cairn-health-check' } }, (res) => {
      res.resume();
      res.on('error', () => undefined);
      const status = res.statusCode ?? 0;
      resolve(httpStatusHealthy(status, target.statuses) ? { ok: true } : { ok: false, error: `HTTP status ${status}` });
    });
    req.on('error', (err) => resolve(signal.aborted ? aborted(signal) : { ok: false, error: err.message }));
  });
}

export function probeTcp(port: number, signal: AbortSignal): Promise<ProbeOutcome> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(aborted(signal));
    const socket = net.connect({ host: '127.0.0.1', port });
    const onAbort = () => {
      socket.destroy();
      resolve(aborted(signal));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    socket.once('connect', () => {
      signal.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve({ ok: true });
    });
    socket.once('error', (err) => {
      signal.removeEventListener('abort', onAbort);
      resolve({ ok: false, error: err.message });
    });
  });
}

export interface CommandTarget {
  command: string;
  cwd: string;
  env: Record<string, string>;
  /** Run as this user (a root agent checking a task of another user); left out: the agent's. */
  uid?: number;
  gid?: number;
}

/** `sh -c command` in its own process group, so an abort reaches everything it started. */
export function probeCommand(target: CommandTarget, signal: AbortSignal): Promise<ProbeOutcome> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(aborted(signal));
    let output = '';
    const keep = (d: Buffer) => {
      output = (output + d.toString('utf8')).slice(-MAX_OUTPUT_CHARS);
    };
    let child;
    try {
      child = spawn('/bin/sh', ['-c', target.command], {
        cwd: target.cwd,
        env: target.env,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        ...(target.uid !== undefined ? { uid: target.uid } : {}),
        ...(target.gid !== undefined ? { gid: target.gid } : {}),
      });
    } catch (err) {
      return resolve({ ok: false, error: `cannot run the command: ${(err as Error).message}` });
    }
    const onAbort = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    signal.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('error', (err) => {
      signal.removeEventListener('abort', onAbort);
      resolve({ ok: false, error: `cannot run the command: ${err.message}` });
    });
    child.once('close', (code, sig) => {
      signal.removeEventListener('abort', onAbort);
      if (signal.aborted) return resolve(aborted(signal));
      if (code === 0) return resolve({ ok: true });
      const how = code !== null ? `exited with code ${code}` : `killed by signal ${sig}`;
      const said = output.trim();
      resolve({ ok: false, error: said ? `${how}: ${said}` : how });
    });
  });
}

/**
 * `sh -c command` inside the task's container (Docker's exec): the container's environment,
 * user and file system. An abort stops waiting for it; Docker offers no way to kill an exec.
 */
export async function probeDockerExec(docker: Docker, containerName: string, command: string, signal: AbortSignal): Promise<ProbeOutcome> {
  if (signal.aborted) return aborted(signal);
  try {
    const exec = await docker.getContainer(containerName).exec({ Cmd: ['sh', '-c', command], AttachStdout: true, AttachStderr: true });
    const stream = await exec.start({ hijack: true, stdin: false });
    const output = new ExecOutput();
    await new Promise<void>((resolve) => {
      const onAbort = () => {
        stream.destroy();
        resolve();
      };
      signal.addEventListener('abort', onAbort, { once: true });
      stream.on('data', (d: Buffer) => output.add(d));
      const done = () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      stream.once('end', done);
      stream.once('close', done);
      stream.once('error', done);
    });
    if (signal.aborted) return aborted(signal);
    // The daemon may record the exit a moment after the output ends.
    let info = await exec.inspect();
    for (let i = 0; info.Running && i < 20 && !signal.aborted; i++) {
      await new Promise((r) => setTimeout(r, 25));
      info = await exec.inspect();
    }
    if (signal.aborted) return aborted(signal);
    if (info.Running) return { ok: false, error: 'the command was still running when its output ended' };
    if (info.ExitCode === 0) return { ok: true };
    const said = output.text().trim();
    const how = `exited with code ${info.ExitCode ?? 'unknown'}`;
    return { ok: false, error: said ? `${how}: ${said}` : how };
  } catch (err) {
    if (signal.aborted) return aborted(signal);
    return { ok: false, error: `docker exec failed: ${(err as Error).message}` };
  }
}

/**
 * The output of an exec without a TTY: Docker multiplexes stdout and stderr in frames of an
 * 8-byte header (stream, 0, 0, 0, big-endian length) and the payload. Keeps the last
 * characters of both, in order; a payload is taken as it comes, never buffered whole.
 */
export class ExecOutput {
  private header = Buffer.alloc(0);
  /** Payload bytes of the current frame still to come; 0: a header is next. */
  private remaining = 0;
  private kept = '';

  add(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.remaining > 0) {
        const take = Math.min(this.remaining, chunk.length - at);
        this.kept = (this.kept + chunk.subarray(at, at + take).toString('utf8')).slice(-MAX_OUTPUT_CHARS);
        this.remaining -= take;
        at += take;
        continue;
      }
      const need = 8 - this.header.length;
      this.header = Buffer.concat([this.header, chunk.subarray(at, at + need)]);
      at += Math.min(need, chunk.length - at);
      if (this.header.length === 8) {
        this.remaining = this.header.readUInt32BE(4);
        this.header = Buffer.alloc(0);
      }
    }
  }

  text(): string {
    return this.kept;
  }
}
