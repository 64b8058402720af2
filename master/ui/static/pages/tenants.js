// Who uses the cluster: per role, the frameworks in it, what its running tasks hold, its
// weight, its share of each resource and its dominant (DRF) share — the share the allocator
// evens out, divided by the weight.
import { useMemo } from 'preact/hooks';
import { html, parseResources, fmtMiB, trim, Bar, ErrorNote } from '../html.js';
import { useLive } from '../live.js';
import { Table } from '../components/table.js';

export const route = { pattern: /^#\/tenants$/, title: 'Tenants', nav: 'Tenants' };

const TERMINAL = new Set(['TASK_FINISHED', 'TASK_FAILED', 'TASK_KILLED', 'TASK_LOST', 'TASK_ERROR', 'TASK_GONE', 'TASK_DROPPED']);
const KINDS = ['cpus', 'mem', 'disk', 'gpus'];

const pct = (x) => `${(x * 100).toFixed(x < 0.1 ? 1 : 0)}%`;

export function Page() {
  const state = useLive('/api/v1/state', ['tasks', 'frameworks', 'agents']);
  const roles = useLive('/api/v1/roles', ['roles']);
  const rows = useMemo(() => {
    const s = state.data;
    if (!s) return [];
    const total = { cpus: 0, mem: 0, disk: 0, gpus: 0 };
    for (const a of s.agents) if (a.reachable) { const r = parseResources(a.resources); for (const k of KINDS) total[k] += r[k]; }
    const weights = roles.data?.weights ?? {};
    const byRole = new Map();
    const roleOf = new Map(s.frameworks.map((f) => [f.id, f.role || '*']));
    const entry = (role) => {
      if (!byRole.has(role)) byRole.set(role, { role, frameworks: new Set(), tasks: 0, held: { cpus: 0, mem: 0, disk: 0, gpus: 0 } });
      return byRole.get(role);
    };
    for (const f of s.frameworks) entry(f.role || '*').frameworks.add(f.name || f.id);
    for (const role of Object.keys(weights)) entry(role);
    for (const t of s.tasks) {
      if (TERMINAL.has(t.state)) continue;
      const e = entry(roleOf.get(t.frameworkId) ?? '*');
      e.tasks++;
      const r = parseResources(t.resources);
      for (const k of KINDS) e.held[k] += r[k];
    }
    return [...byRole.values()].map((e) => {
      const shares = Object.fromEntries(KINDS.map((k) => [k, total[k] > 0 ? e.held[k] / total[k] : 0]));
      const dominantKind = KINDS.reduce((a, b) => (shares[b] > shares[a] ? b : a), 'cpus');
      const weight = weights[e.role] ?? 1;
      return { ...e, frameworks: [...e.frameworks], shares, dominant: shares[dominantKind], dominantKind, weight, weighted: shares[dominantKind] / weight };
    }).sort((a, b) => b.weighted - a.weighted || a.role.localeCompare(b.role));
  }, [state.data, roles.data]);

  return html`<div class="page tenants">
    <header class="pagehead"><h1>Tenants</h1><span class="muted">roles, what they hold and their dominant share; no quotas are set in this Cairn (weights only)</span></header>
    <${ErrorNote} error=${state.error} />
    <${Table} label="roles" rows=${rows} rowKey=${(r) => r.role}
      empty=${state.loading ? 'Loading…' : 'No roles hold anything yet.'}
      onOpen=${(r) => { location.hash = '#/tasks'; }}
      columns=${[
        { key: 'role', title: 'Role', render: (r) => html`<b>${r.role}</b>` },
        { key: 'frameworks', title: 'Frameworks', render: (r) => html`<span class="chips">${r.frameworks.map((f) => html`<span class="chip">${f}</span>`)}</span>` },
        { key: 'tasks', title: 'Tasks', align: 'right' },
        { key: 'cpus', title: 'CPUs', align: 'right', render: (r) => html`${trim(r.held.cpus, 2)} <span class="muted">${pct(r.shares.cpus)}</span>` },
        { key: 'mem', title: 'Memory', align: 'right', render: (r) => html`${fmtMiB(r.held.mem)} <span class="muted">${pct(r.shares.mem)}</span>` },
        { key: 'disk', title: 'Disk', align: 'right', render: (r) => html`${fmtMiB(r.held.disk)} <span class="muted">${pct(r.shares.disk)}</span>` },
        { key: 'gpus', title: 'GPUs', align: 'right', render: (r) => html`${trim(r.held.gpus)} <span class="muted">${pct(r.shares.gpus)}</span>` },
        { key: 'weight', title: 'Weight', align: 'right', render: (r) => trim(r.weight, 2) },
        { key: 'quota', title: 'Quota', align: 'right', render: () => html`<span class="muted">none</span>` },
        { key: 'dominant', title: 'DRF share', width: '14em', render: (r) => html`<${Bar} used=${r.dominant} total=${1} label=${`${pct(r.dominant)} ${r.dominantKind}${r.weight !== 1 ? ` (÷${trim(r.weight, 2)}: ${pct(r.weighted)})` : ''}`} />` },
      ]} />
  </div>`;
}
