// DNS naming as mesos-dns does it: labels from task and framework names, canonical task
// hashes, domains, upstream resolver parsing.

import { describe, expect, it } from 'vitest';
import { compileDnsConfig, parseResolvConf, parseUpstream } from '../../master/dns/config.ts';
import { addressOf, agentIdTail, ancestorsWithin, canonicalDomain, inDomain, taskDnsName, taskIdHash, toDomainFragment, toLabel, zbase32 } from '../../master/dns/names.ts';

describe('labels', () => {
  it.each([
    ['web', 'web'],
    ['My_App', 'my-app'], // upper case lowered, '_' becomes '-'
    ['trainer.v2', 'trainer-v2'], // '.' becomes '-' inside a task name
    ['ps 0 (primary)!', 'ps0primary'], // spaces and punctuation dropped
    ['--edge--', 'edge'], // no leading or trailing '-'
    ['_private', 'private'],
    ['worker-007', 'worker-007'],
    ['日本語', ''], // nothing usable is left
    ['', ''],
  ])('%j → %j', (name, label) => {
    expect(toLabel(name)).toBe(label);
  });

  it('cuts labels at 63 characters, never ending in a dash', () => {
    expect(toLabel('a'.repeat(100))).toBe('a'.repeat(63));
    expect(toLabel(`${'a'.repeat(62)}-b`)).toBe('a'.repeat(62));
    for (const l of [toLabel('x'.repeat(70)), toLabel(`${'y'.repeat(62)}__z`)]) expect(l).toMatch(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/);
  });

  it('keeps a framework name\'s dots as label separators, as mesos-dns does', () => {
    expect(toDomainFragment('marathon')).toBe('marathon');
    expect(toDomainFragment('Marathon.Prod')).toBe('marathon.prod');
    expect(toDomainFragment('chronos with a space AND MIXED')).toBe('chronoswithaspaceandmixed');
    expect(toDomainFragment('a..b.')).toBe('a.b');
    expect(toDomainFragment('my_framework')).toBe('my-framework');
  });

  it('names a task task.framework.domain, or nothing when a part leaves no label', () => {
    expect(taskDnsName('PS_0', 'Train.Prod', 'cairn')).toBe('ps-0.train.prod.cairn');
    expect(taskDnsName('***', 'train', 'cairn')).toBe('');
    expect(taskDnsName('ps', '...', 'cairn')).toBe('');
    expect(taskDnsName('ps', 'x'.repeat(63).concat('.').repeat(4), 'cairn')).toBe('');
  });
});

describe('canonical task names', () => {
  it('encodes z-base-32 as specified', () => {
    // Examples from the z-base-32 specification.
    expect(zbase32(Buffer.from([0xf0, 0xbf, 0xc7]))).toBe('6n9hq');
    expect(zbase32(Buffer.from([0xd4, 0x7a, 0x04]))).toBe('4t7ye');
  });

  it('hashes task ids to five stable characters and takes the agent id tail', () => {
    expect(taskIdHash('web-1')).toMatch(/^[ybndrfg8ejkmcpqxot1uwisza345h769]{5}$/);
    expect(taskIdHash('web-1')).toBe(taskIdHash('web-1'));
    expect(taskIdHash('web-1')).not.toBe(taskIdHash('web-2'));
    expect(agentIdTail('9f0b8a3c-1d2e-4f5a-8b7c-6d5e4f3a2b1c-S0')).toBe('s0');
    expect(agentIdTail('plain')).toBe('plain');
  });
});

describe('domains and addresses', () => {
  it('canonicalises domains and rejects bad ones', () => {
    expect(canonicalDomain('Cairn.')).toBe('cairn');
    expect(canonicalDomain('.cluster.example')).toBe('cluster.example');
    for (const bad of ['', '.', 'a_b', '-x', 'x-', 'a..b', 'ü']) expect(canonicalDomain(bad)).toBeUndefined();
  });

  it('tells names in the domain and their ancestors', () => {
    expect(inDomain('cairn', 'cairn')).toBe(true);
    expect(inDomain('web.fw.cairn', 'cairn')).toBe(true);
    expect(inDomain('notcairn', 'cairn')).toBe(false);
    expect(inDomain('cairn.example', 'cairn')).toBe(false);
    expect(ancestorsWithin('_web._tcp.fw.cairn', 'cairn')).toEqual(['_tcp.fw.cairn', 'fw.cairn', 'cairn']);
    expect(ancestorsWithin('cairn', 'cairn')).toEqual([]);
  });

  it('reads agent addresses: IPv4 (also IPv4-mapped), IPv6, and nothing for host names', () => {
    expect(addressOf('10.0.0.5')).toEqual({ family: 4, address: '10.0.0.5' });
    expect(addressOf('::ffff:10.0.0.5')).toEqual({ family: 4, address: '10.0.0.5' });
    expect(addressOf('FE80::1')).toEqual({ family: 6, address: 'fe80::1' });
    expect(addressOf('host-a')).toBeUndefined();
  });
});

describe('DNS configuration', () => {
  it('parses upstream resolvers', () => {
    expect(parseUpstream('10.0.0.2')).toEqual({ host: '10.0.0.2', port: 53, family: 4 });
    expect(parseUpstream('127.0.0.1:5353')).toEqual({ host: '127.0.0.1', port: 5353, family: 4 });
    expect(parseUpstream('[::1]:5353')).toEqual({ host: '::1', port: 5353, family: 6 });
    expect(parseUpstream('2001:DB8:0:0::1')).toEqual({ host: '2001:db8::1', port: 53, family: 6 });
    expect(() => parseUpstream('dns.example')).toThrow(/dnsResolvers.*not an IP address/);
    expect(() => parseUpstream('10.0.0.2:0')).toThrow(/bad port/);
  });

  it('reads the nameservers of a resolv.conf', () => {
    const text = '# generated\nsearch example\nnameserver 10.255.255.53\nnameserver fe80::1%eth0\n nameserver 1.1.1.1 \noptions ndots:2\n';
    expect(parseResolvConf(text).map((u) => `${u.host}:${u.port}`)).toEqual(['10.255.255.53:53', 'fe80::1:53', '1.1.1.1:53']);
  });

  it('fills defaults and names the option at fault', () => {
    const c = compileDnsConfig({ port: 0, resolvers: [] });
    expect(c).toMatchObject({ domain: 'cairn', port: 0, host: '0.0.0.0', upstreams: [], leaderIp: '127.0.0.1', ttlS: 5, negativeTtlS: 1 });
    expect(compileDnsConfig({ port: 0, resolvConfPath: '/nonexistent' }).upstreams).toEqual([]);
    expect(() => compileDnsConfig({ domain: 'bad_domain' })).toThrow(/domain/);
    expect(() => compileDnsConfig({ port: 70000 })).toThrow(/dnsPort/);
    expect(() => compileDnsConfig({ host: 'localhost' })).toThrow(/dnsHost/);
  });
});
