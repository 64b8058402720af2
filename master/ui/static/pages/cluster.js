// The cluster at a glance: totals, every agent (CPU, memory, disk and GPUs used of total,
// per-GPU memory and utilisation where the agent reports them, attributes, its state) and
// the masters with the leader.
import { useMemo, useState } from 'preact/hooks';
import { html, parseResources, fmtMiB, trim, Ago, Bar, ErrorNote, Tag, toneOf } from '../html.js';
import { useLive, useLeader } from '../live.js';
import { Table } from '../components/table.js';

export const route = { pattern: /^#\/cluster$/, title: 'Cluster', nav: 'Cluster' };

function agentState(a) {
  if (!a.reachable) return 'unreachable';
  if (a.draining) return 'draining';
  return 'reachable';
}

function Gpus({ agent }) {
  const total = parseResources(agent.resources).gpus;
  const used = parseResources(agent.used).gpus;
  const devices = agent.usage?.gpus ?? [];
  if (!total && devices.length === 0) return html`<span class="muted">—</span>`;
  return html`<div class="gpus">
    <span>${trim(used)}/${trim(total)}</span>
    ${devices.map((g) => html`<span class=${`gpu${(agent.usage?.unhealthyGpus ?? []).includes(g.index) ? ' bad' : ''}`} title=${`GPU ${g.index}: ${g.utilizationPercent}% busy, ${g.memoryUsedMib} of ${g.memoryTotalMib} MiB`}>
      #${g.index} ${Math.round(g.utilizationPercent)}% · ${fmtMiB(g.memoryUsedMib)}/${fmtMiB(g.memoryTotalMib)}
    </span>`)}
  </div>`;
}

function Attributes({ attrs }) {
  const entries = Object.entries(attrs ?? {});
  if (entries.length === 0) return html`<span class="muted">—</span>`;
  return html`<span class="chips">${entries.map(([k, v]) => html`<span class="chip">${k}=${v}</span>`)}</span>`;
}

function Masters() {
  const hello = useLeader();
  const listing = useLive((hello?.masters?.length ?? 0) > 1 ? '/api/v1/masters' : null, ['masters']);
  const rows = useMemo(() => {
    if (listing.data?.masters) {
      return listing.data.masters.map((m) => ({ id: m.id, url: m.url, leader: m.leader, role: m.role ?? (m.reachable ? '' : 'unreachable'), reachable: m.reachable, applied: m.applied, self: m.self }));
    }
    return (hello?.masters ?? [location.origin]).map((url, i) => ({ id: i + 1, url, leader: url === hello?.leader, role: url === hello?.leader ? 'leader' : '', reachable: true }));
  }, [listing.data, hello]);
  return html`<section>
    <h2>Masters <span class="muted">${hello?.leader ? html`leader: <span class="mono">${hello.leader}</span>` : 'no leader known'}</span></h2>
    <${Table} label="masters" rowKey=${(m) => m.url} rows=${rows} columns=${[
      { key: 'id', title: 'Id', width: '4em' },
      { key: 'url', title: 'URL', render: (m) => html`<a href=${`${m.url}/ui/`}>${m.url}</a>${m.self ? html` <span class="muted">(answering)</span>` : null}` },
      { key: 'role', title: 'Role', render: (m) => html`<${Tag} tone=${m.leader ? 'good' : m.reachable ? 'none' : 'bad'}>${m.leader ? 'leader' : m.role || 'follower'}<//>` },
      { key: 'applied', title: 'Applied', align: 'right', render: (m) => m.applied ?? '—' },
    ]} />
  </section>`;
}

export function Page() {
  const [q, setQ] = useState('');
  const path = `/api/v1/agents?limit=1000${q ? `&q=${encodeURIComponent(q)}` : ''}`;
  const paged = useLive(path, ['agents', 'tasks']);
  // A master without the paginated read: the whole state.
  const fallback = useLive(paged.error?.status === 404 ? '/api/v1/state' : null, ['agents', 'tasks']);
  const agents = useMemo(() => {
    const list = paged.data?.agents ?? fallback.data?.agents ?? [];
    if (paged.data || !q) return list;
    return list.filter((a) => `${a.hostname} ${a.id} ${JSON.stringify(a.attributes)}`.includes(q));
  }, [paged.data, fallback.data, q]);
  const total = paged.data?.total ?? agents.length;
  const sums = useMemo(() => {
    const s = { cpus: 0, cpusUsed: 0, mem: 0, memUsed: 0, disk: 0, diskUsed: 0, gpus: 0, gpusUsed: 0, reachable: 0, draining: 0, unreachable: 0 };
    for (const a of agents) {
      const r = parseResources(a.resources);
      const u = parseResources(a.used);
      s.cpus += r.cpus; s.cpusUsed += u.cpus; s.mem += r.mem; s.memUsed += u.mem;
      s.disk += r.disk; s.diskUsed += u.disk; s.gpus += r.gpus; s.gpusUsed += u.gpus;
      s[agentState(a)]++;
    }
    return s;
  }, [agents]);

  return html`<div class="page cluster">
    <header class="pagehead">
      <h1>Cluster</h1>
      <input data-filter type="search" placeholder="filter agents (/)" value=${q} onInput=${(e) => setQ(e.target.value)} aria-label="filter agents" />
    </header>
    <${ErrorNote} error=${paged.error?.status === 404 ? fallback.error : paged.error} />
    <div class="cards">
      <div class="card"><b>${total}</b> agents<div class="muted">${sums.reachable} reachable · ${sums.draining} draining · ${sums.unreachable} unreachable</div></div>
      <div class="card">CPU <${Bar} used=${sums.cpusUsed} total=${sums.cpus} label=${`${trim(sums.cpusUsed)} / ${trim(sums.cpus)}`} /></div>
      <div class="card">Memory <${Bar} used=${sums.memUsed} total=${sums.mem} label=${`${fmtMiB(sums.memUsed)} / ${fmtMiB(sums.mem)}`} /></div>
      <div class="card">Disk <${Bar} used=${sums.diskUsed} total=${sums.disk} label=${`${fmtMiB(sums.diskUsed)} / ${fmtMiB(sums.disk)}`} /></div>
      <div class="card">GPUs <${Bar} used=${sums.gpusUsed} total=${sums.gpus} label=${`${trim(sums.gpusUsed)} / ${trim(sums.gpus)}`} /></div>
    </div>
    <section>
      <h2>Agents ${total > agents.length ? html`<span class="muted">(first ${agents.length} of ${total})</span>` : null}</h2>
      <${Table} label="agents" rowKey=${(a) => a.id} rows=${agents}
        onOpen=${(a) => { location.hash = `#/tasks?agent=${encodeURIComponent(a.id)}`; }}
        empty=${paged.loading && !paged.data ? 'Loading…' : 'No agents registered.'}
        columns=${[
          { key: 'hostname', title: 'Agent', render: (a) => html`<div class="agentname"><a href=${`#/agents/${encodeURIComponent(a.id)}`} onClick=${(e) => e.stopPropagation()}><b>${a.hostname}</b></a><span class="mono muted" title=${a.id}>${a.id.slice(-12)}</span></div>` },
          { key: 'state', title: 'State', width: '8em', render: (a) => html`<${Tag} tone=${toneOf(agentState(a))}>${agentState(a)}<//>` },
          { key: 'cpu', title: 'CPU', width: '11em', render: (a) => { const r = parseResources(a.resources), u = parseResources(a.used); return html`<${Bar} used=${u.cpus} total=${r.cpus} label=${`${trim(u.cpus, 2)} / ${trim(r.cpus)}`} />`; } },
          { key: 'mem', title: 'Memory', width: '12em', render: (a) => { const r = parseResources(a.resources), u = parseResources(a.used); return html`<${Bar} used=${u.mem} total=${r.mem} label=${`${fmtMiB(u.mem)} / ${fmtMiB(r.mem)}`} />`; } },
          { key: 'disk', title: 'Disk', width: '12em', render: (a) => { const r = parseResources(a.resources), u = parseResources(a.used); return html`<${Bar} used=${u.disk} total=${r.disk} label=${`${fmtMiB(u.disk)} / ${fmtMiB(r.disk)}`} />`; } },
          { key: 'gpus', title: 'GPUs', render: (a) => html`<${Gpus} agent=${a} />` },
          { key: 'attributes', title: 'Attributes', render: (a) => html`<${Attributes} attrs=${a.attributes} />` },
          { key: 'age', title: 'Up', width: '6em', align: 'right', render: (a) => html`<${Ago} ms=${a.registeredAtMs} />` },
        ]} />
    </section>
    <${Masters} />
  </div>`;
}
