// The pure translation of a task into Docker's container-create body, the masters' DNS
// servers as Docker takes them, and which containers an agent takes for its own.

import { describe, expect, it } from 'vitest';
import { containerConfig, NO_CONTAINER_DNS, resolvePortMappings } from '../../agent/executors/docker/container-config.ts';
import type { DockerTaskInfo } from '../../agent/executors/docker/docker-executor.ts';
import { dockerDnsServers } from '../../agent/agent.ts';
import { cgroupFromProcFile } from '../../agent/isolation/cgroups.ts';
import { containerOwnership, workDirInstance } from '../../agent/executors/docker/ownership.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function task(over: Partial<DockerTaskInfo['container']['docker']> = {}, resources = 'cpus:0.5;mem:128;ports:[31000-31001]'): DockerTaskInfo {
  return {
    taskId: 'web.1', frameworkId: 'fw', name: 'web', resources, killGraceMs: 0, labels: [{ name: 'team', value: 'ml' }],
    command: { shell: true, value: 'echo hi', arguments: [], environment: [{ name: 'GREETING', value: 'hi' }] },
    container: { type: 'docker', docker: { image: 'img:1', network: 'bridge', portMappings: [{ hostPort: 0, containerPort: 80, protocol: 'tcp' }], pullPolicy: 'never', ...over }, volumes: [{ hostPath: '/data', containerPath: '/in', readOnly: true }] },
  };
}

describe('container create body', () => {
  it('runs the image\'s own entrypoint and command when the task names no program, and its entrypoint with args alone', () => {
    const bare = { ...task(), command: { shell: false, value: '', arguments: [], environment: [] } };
    const b = containerConfig({ task: bare, agentId: 'a-S0', agentInstance: 'i', hostname: 'h1', sandbox: '/s', gpuIndices: [], dns: NO_CONTAINER_DNS, cpuQuota: false });
    expect(b.Entrypoint).toBeUndefined();
    expect(b.Cmd).toBeUndefined();
    const args = { ...task(), command: { shell: false, value: '', arguments: ['--epochs', '3'], environment: [] } };
    const c = containerConfig({ task: args, agentId: 'a-S0', agentInstance: 'i', hostname: 'h1', sandbox: '/s', gpuIndices: [], dns: NO_CONTAINER_DNS, cpuQuota: false });
    expect(c.Entrypoint).toBeUndefined();
    expect(c.Cmd).toEqual(['--epochs', '3']);
  });

  it('carries env, limits, ports, volumes, DNS, GPUs and the labels that tie it to its task', () => {
    const b = containerConfig({ task: task(), agentId: 'a-S0', agentInstance: 'inst-1', hostname: 'h1', sandbox: '/w/sandboxes/web.1', gpuIndices: [1, 3], dns: { servers: ['10.0.0.1', '10.0.0.2'], search: ['marathon.cairn', 'cairn'], options: ['ndots:2'] }, cpuQuota: true });
    expect(b.name).toBe('cairn-web.1');
    expect(b.Image).toBe('img:1');
    expect(b.Entrypoint).toEqual(['/bin/sh', '-c']);
    expect(b.Cmd).toEqual(['echo hi']);
    expect(b.Env).toEqual(expect.arrayContaining(['PORT=31000', 'PORT0=31000', 'PORT1=31001', 'HOST=h1', 'GREETING=hi', 'CAIRN_TASK_ID=web.1', 'CUDA_VISIBLE_DEVICES=1,3']));
    expect(b.Env.some((e) => e.startsWith('PATH='))).toBe(false); // the image's own PATH
    expect(b.Labels).toMatchObject({ 'cairn.task-id': 'web.1', 'cairn.framework-id': 'fw', 'cairn.agent-id': 'a-S0', 'cairn.agent-instance': 'inst-1', 'cairn.label.team': 'ml' });
    expect(b.HostConfig).toMatchObject({
      NetworkMode: 'bridge',
      Memory: 128 * 1024 * 1024,
      MemorySwap: 128 * 1024 * 1024,
      CpuShares: 512,
      CpuPeriod: 100_000,
      CpuQuota: 50_000,
      PortBindings: { '80/tcp': [{ HostPort: '31000' }] },
      Binds: ['/w/sandboxes/web.1:/mnt/mesos/sandbox:rw', '/data:/in:ro'],
      Dns: ['10.0.0.1', '10.0.0.2'],
      DnsSearch: ['marathon.cairn', 'cairn'],
      DnsOptions: ['ndots:2'],
      DeviceRequests: [{ Driver: 'nvidia', DeviceIDs: ['1', '3'], Capabilities: [['gpu']] }],
    });
  });

  it('on the host network has no port bindings; without DNS servers or GPUs sets neither', () => {
    const b = containerConfig({ task: task({ network: 'host', portMappings: [] }), agentId: 'a', agentInstance: 'i', hostname: 'h', sandbox: '/s', gpuIndices: [], dns: NO_CONTAINER_DNS });
    expect(b.HostConfig.NetworkMode).toBe('host');
    expect(b.HostConfig.PortBindings).toBeUndefined();
    expect(b.HostConfig.Dns).toBeUndefined();
    expect(b.HostConfig.DeviceRequests).toBeUndefined();
    // Without cpuQuota the cpus only weight the container.
    expect(b.HostConfig.CpuShares).toBe(512);
    expect(b.HostConfig.CpuQuota).toBeUndefined();
    // No runtime named: the daemon's default.
    expect(b.HostConfig.Runtime).toBeUndefined();
  });

  it('starts every container with no-new-privileges, all capabilities dropped and the task\'s uid; adds back only what the agent names', () => {
    const b = containerConfig({ task: task(), agentId: 'a', agentInstance: 'i', hostname: 'h', sandbox: '/s', gpuIndices: [], dns: NO_CONTAINER_DNS, user: { uid: 65534, gid: 65534 } });
    expect(b.User).toBe('65534:65534');
    expect(b.HostConfig.SecurityOpt).toEqual(['no-new-privileges']);
    expect(b.HostConfig.CapDrop).toEqual(['ALL']);
    expect(b.HostConfig.CapAdd).toBeUndefined();
    expect(b.HostConfig).not.toHaveProperty('Privileged');
    const added = containerConfig({ task: task(), agentId: 'a', agentInstance: 'i', hostname: 'h', sandbox: '/s', gpuIndices: [], dns: NO_CONTAINER_DNS, capAdd: ['NET_BIND_SERVICE'] });
    expect(added.HostConfig.CapDrop).toEqual(['ALL']);
    expect(added.HostConfig.CapAdd).toEqual(['NET_BIND_SERVICE']);
    expect(added.HostConfig.SecurityOpt).toEqual(['no-new-privileges']);
    // Without a decided user, the image's (the agent always decides one).
    expect(added.User).toBeUndefined();
  });

  it('starts the container with the runtime the agent names', () => {
    const b = containerConfig({ task: task(), agentId: 'a', agentInstance: 'i', hostname: 'h', sandbox: '/s', gpuIndices: [], dns: NO_CONTAINER_DNS, runtime: 'crun' });
    expect(b.HostConfig.Runtime).toBe('crun');
  });

  it('maps host ports only from the task\'s own ports', () => {
    expect(resolvePortMappings([{ hostPort: 0, containerPort: 80, protocol: 'tcp' }, { hostPort: 31000, containerPort: 81, protocol: 'udp' }], [31000, 31001])).toEqual([
      { hostPort: 31001, containerPort: 80, protocol: 'tcp' },
      { hostPort: 31000, containerPort: 81, protocol: 'udp' },
    ]);
    expect(() => resolvePortMappings([{ hostPort: 40000, containerPort: 80, protocol: 'tcp' }], [31000])).toThrow(/not among the task's ports/);
    expect(() => resolvePortMappings([{ hostPort: 0, containerPort: 80, protocol: 'tcp' }, { hostPort: 0, containerPort: 81, protocol: 'tcp' }], [31000])).toThrow(/more port mappings/);
  });
});

describe('masters as containers\' DNS servers', () => {
  it('keeps the servers on port 53, as bare addresses', () => {
    expect(dockerDnsServers(['10.0.0.1:53', '10.0.0.2:8053', '[fd00::1]:53', 'bogus'])).toEqual(['10.0.0.1', 'fd00::1']);
    expect(dockerDnsServers([])).toEqual([]);
  });
});

describe('a container\'s cgroup, from /proc/PID/cgroup', () => {
  const mounts = { v1: new Map([['memory', '/sys/fs/cgroup/memory'], ['cpu', '/sys/fs/cgroup/cpu,cpuacct'], ['cpuacct', '/sys/fs/cgroup/cpu,cpuacct']]), v2: [] as string[] };
  it('reads v1 hierarchies, whatever path the daemon chose', () => {
    const text = '12:pids:/docker/abc\n5:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/\n';
    expect(cgroupFromProcFile(text, mounts)).toEqual({ version: 1, memory: '/sys/fs/cgroup/memory/docker/abc', cpu: '/sys/fs/cgroup/cpu,cpuacct/docker/abc' });
  });
  it('reads the unified hierarchy when there is no v1 memory controller', () => {
    expect(cgroupFromProcFile('0::/system.slice/docker-abc.scope\n', { v1: new Map(), v2: ['/sys/fs/cgroup'] })).toEqual({ version: 2, dir: '/sys/fs/cgroup/system.slice/docker-abc.scope' });
    expect(cgroupFromProcFile('garbage', { v1: new Map(), v2: [] })).toBeUndefined();
  });
});

describe('which containers are this agent\'s', () => {
  const me = { instance: 'a'.repeat(32), agentId: 'agent-S1', sandboxOf: (t: string) => `/work/sandboxes/${t}` };
  const mount = (t: string) => [{ Source: `/work/sandboxes/${t}`, Destination: '/mnt/mesos/sandbox' }];

  it('adopts a container with this work dir\'s instance, and no other', () => {
    expect(containerOwnership({ Id: 'c1', Labels: { 'cairn.task-id': 't1', 'cairn.agent-instance': me.instance, 'cairn.agent-id': 'agent-S1' } }, me)).toEqual({ ours: true });
    // The instance decides, even when the agent id was changed by the master since.
    expect(containerOwnership({ Id: 'c1', Labels: { 'cairn.task-id': 't1', 'cairn.agent-instance': me.instance, 'cairn.agent-id': 'old-S0' } }, me)).toEqual({ ours: true });
    expect(containerOwnership({ Id: 'c2', Labels: { 'cairn.task-id': 't1', 'cairn.agent-instance': 'b'.repeat(32), 'cairn.agent-id': 'agent-S1' }, Mounts: mount('t1') }, me))
      .toMatchObject({ ours: false, why: expect.stringContaining('another agent work dir') });
  });

  it('adopts an unmarked container (an older agent\'s) only with its own agent id and sandbox', () => {
    expect(containerOwnership({ Id: 'c', Labels: { 'cairn.task-id': 't1', 'cairn.agent-id': 'agent-S1' }, Mounts: mount('t1') }, me)).toEqual({ ours: true });
    expect(containerOwnership({ Id: 'c', Labels: { 'cairn.task-id': 't1', 'cairn.agent-id': '' }, Mounts: mount('t1') }, me)).toMatchObject({ ours: false, why: 'it carries no agent id' });
    expect(containerOwnership({ Id: 'c', Labels: { 'cairn.task-id': 't1' }, Mounts: mount('t1') }, me)).toMatchObject({ ours: false, why: 'it carries no agent id' });
    expect(containerOwnership({ Id: 'c', Labels: { 'cairn.task-id': 't1', 'cairn.agent-id': 'other-S9' }, Mounts: mount('t1') }, me)).toMatchObject({ ours: false, why: 'it belongs to agent other-S9' });
    expect(containerOwnership({ Id: 'c', Labels: { 'cairn.task-id': 't1', 'cairn.agent-id': 'agent-S1' }, Mounts: [{ Source: '/elsewhere/t1', Destination: '/mnt/mesos/sandbox' }] }, me))
      .toMatchObject({ ours: false, why: expect.stringContaining('/elsewhere/t1 is not in this agent') });
    expect(containerOwnership({ Id: 'c', Labels: { 'cairn.task-id': 't1', 'cairn.agent-id': 'agent-S1' }, Mounts: mount('t1') }, { ...me, agentId: undefined })).toMatchObject({ ours: false });
    expect(containerOwnership({ Id: 'c', Labels: { 'cairn.agent-id': 'agent-S1' } }, me)).toMatchObject({ ours: false, why: 'it names no task' });
  });

  it('never labels a container with an empty agent id', () => {
    const input = { task: task(), agentId: '', agentInstance: 'i', hostname: 'h', sandbox: '/s', gpuIndices: [], dns: NO_CONTAINER_DNS };
    expect(() => containerConfig(input)).toThrow(expect.objectContaining({ field: 'agentId' }));
    expect(() => containerConfig({ ...input, agentId: 'a', agentInstance: '' })).toThrow(expect.objectContaining({ field: 'agentId' }));
  });

  it('keeps one instance id per work dir', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-instance-'));
    try {
      const id = workDirInstance(join(dir, 'agent'));
      expect(id).toMatch(/^[0-9a-f]{32}$/);
      expect(workDirInstance(join(dir, 'agent'))).toBe(id);
      expect(workDirInstance(join(dir, 'other'))).not.toBe(id);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
