// The DNS HTTP API on the master's HTTP server, shaped like mesos-dns' so that its clients
// work: /v1/version, /v1/config, /v1/hosts/NAME (A/AAAA), /v1/services/NAME (SRV with
// the target's address), /v1/enumerate (records per framework and task), /v1/axfr. Names
// are answered with a trailing dot; an unknown name gives mesos-dns' one empty record.
// The DNS counters are appended to the master's /metrics.

import type { FastifyInstance } from 'fastify';
import { CAIRN_VERSION } from '../../shared/version.ts';
import { promFamily } from '../metrics.ts';
import type { DnsService } from './service.ts';

/** A path parameter as a zone name: lower case, no trailing dot, mesos-dns' `.*` removed. */
function zoneName(raw: string): string {
  return raw.toLowerCase().replace(/\.\*/g, '').replace(/\.+$/, '');
}

export function registerDnsApi(app: FastifyInstance, dns: DnsService): void {

  app.get('/v1/version', async () => ({ Service: 'Cairn-DNS', Version: CAIRN_VERSION }));

  app.get('/v1/config', async () => {
    const c = dns.config;
    return {
      Domain: c.domain,
      Port: dns.port,
      Listener: c.host,
      Resolvers: dns.upstreams.map((u) => (u.port === 53 ? u.host : u.family === 6 ? `[${u.host}]:${u.port}` : `${u.host}:${u.port}`)),
      ExternalOn: dns.upstreams.length > 0,
      Timeout: c.forwardTimeoutMs / 1000,
      TTL: c.ttlS,
      SOAMname: `${dns.zone.nsName}.`,
      SOARname: `root.${dns.zone.nsName}.`,
      SOARefresh: 60,
      SOARetry: 600,
      SOAExpire: 86_400,
      SOAMinttl: c.negativeTtlS,
      // Records follow the registry as it changes: there is no refresh period.
      RefreshSeconds: 0,
      EnforceRFC952: false,
    };
  });

  app.get<{ Params: { host: string } }>('/v1/hosts/:host', async (req) => {
    const name = zoneName(req.params.host);
    const r = dns.zone.lookup(name);
    const out = [...(r?.a ?? []), ...(r?.aaaa ?? [])].map((ip) => ({ host: `${name}.`, ip }));
    return out.length > 0 ? out : [{ host: '', ip: '' }];
  });

  app.get<{ Params: { service: string } }>('/v1/services/:service', async (req) => {
    const name = zoneName(req.params.service);
    const out: { service: string; host: string; ip: string; port: string }[] = [];
    for (const s of dns.zone.lookup(name)?.srv ?? []) {
      const t = dns.zone.lookup(s.target);
      for (const ip of [...(t?.a ?? []), ...(t?.aaaa ?? [])]) out.push({ service: req.params.service, host: `${s.target}.`, ip, port: String(s.port) });
    }
    return out.length > 0 ? out : [{ service: '', host: '', ip: '', port: '' }];
  });

  app.get('/v1/enumerate', async () => {
    const frameworks = new Map<string, { name: string; tasks: { name: string; id: string; records: { name: string; host: string; rtype: string }[] }[] }>();
    for (const t of dns.zone.taskEntries()) {
      let fw = frameworks.get(t.frameworkId);
      if (!fw) frameworks.set(t.frameworkId, (fw = { name: t.frameworkName, tasks: [] }));
      fw.tasks.push({
        name: t.taskName,
        id: t.taskId,
        records: t.records.map((r) => ({ name: `${r.name}.`, host: r.type === 'SRV' ? r.value.replace(/:(\d+)$/, '.:$1') : r.value, rtype: r.type })),
      });
    }
    return { frameworks: [...frameworks.values()] };
  });

  app.get('/v1/axfr', async () => {
    const records: Record<'As' | 'AAAAs' | 'SRVs', Record<string, string[]>> = { As: {}, AAAAs: {}, SRVs: {} };
    for (const r of dns.zone.records()) {
      const set = r.type === 'A' ? records.As : r.type === 'AAAA' ? records.AAAAs : records.SRVs;
      (set[`${r.name}.`] ??= []).push(r.type === 'SRV' ? r.value.replace(/:(\d+)$/, '.:$1') : r.value);
    }
    return {
      Records: records,
      Serial: dns.zone.serial,
      Mname: `${dns.zone.nsName}.`,
      Rname: `root.${dns.zone.nsName}.`,
      TTL: dns.config.ttlS,
      RefreshSeconds: 0,
      Domain: dns.config.domain,
    };
  });

  // The master's /metrics is rendered elsewhere; the DNS families are added to its text
  // here, so that the REST module needs to know nothing of DNS.
  app.addHook('onSend', async (req, reply, payload) => {
    if (req.routeOptions.url !== '/metrics' || reply.statusCode !== 200 || typeof payload !== 'string') return payload;
    return payload + dnsMetricsText(dns) + '\n';
  });
}

export function dnsMetricsText(dns: DnsService): string {
  const m = dns.metrics;
  return [
    promFamily('cairn_dns_queries_total', 'counter', 'DNS queries received, by transport.', [
      { labels: { transport: 'udp' }, value: m.queries.udp },
      { labels: { transport: 'tcp' }, value: m.queries.tcp },
    ]),
    promFamily('cairn_dns_responses_total', 'counter', 'DNS answers sent, by response code.', [...m.responses].map(([rcode, value]) => ({ labels: { rcode }, value }))),
    promFamily('cairn_dns_forwarded_total', 'counter', 'Queries for names outside the domain sent to upstream resolvers.', [{ value: m.forwarded }]),
    promFamily('cairn_dns_forward_failures_total', 'counter', 'Forwarded queries no upstream answered in time (answered SERVFAIL).', [{ value: m.forwardFailures }]),
    promFamily('cairn_dns_dropped_total', 'counter', 'Packets dropped unanswered (too short to answer, or not queries).', [{ value: m.dropped }]),
    promFamily('cairn_dns_names', 'gauge', 'Names in the zone with records.', [{ value: dns.zone.size }]),
  ].join('\n');
}
