// Who uses the cluster: per role, what its running tasks hold and use, its quota (guarantee
// and limit), its weight and its dominant (DRF) share; per principal, the same without the
// quota. The master computes it (GET /api/v1/roles, sharing/usage-view.ts), as `cairn roles`
// and `cairn usage` show it; the latest preemptions below, each naming its preemptor.
import { html, fmtMiB, trim, When, Bar, ErrorNote } from '../html.js';
import { useLive } from '../live.js';
import { Table } from '../components/table.js';

export const route = { pattern: /^#\/tenants$/, title: 'Tenants', nav: 'Tenants' };

const pct = (x) => `${(x * 100).toFixed(x < 0.1 ? 1 : 0)}%`;

/** `cpus 4 · mem 8 GiB · gpus 2`, the scalars named; '—' for none. */
function amounts(a) {
  if (!a) return html`<span class="muted">—</span>`;
  const parts = [];
  if (a.cpus !== undefined) parts.push(`cpus ${trim(a.cpus, 2)}`);
  if (a.mem !== undefined) parts.push(`mem ${fmtMiB(a.mem)}`);
  if (a.disk !== undefined) parts.push(`disk ${fmtMiB(a.disk)}`);
  if (a.gpus !== undefined) parts.push(`gpus ${trim(a.gpus)}`);
  return parts.length ? parts.join(' · ') : html`<span class="muted">—</span>`;
}

function held(r, total, kind, fmt) {
  const share = total[kind] > 0 ? r.allocated[kind] / total[kind] : 0;
  return html`${fmt(r.allocated[kind])} <span class="muted">${pct(share)}</span>`;
}

function used(u) {
  if (!u) return html`<span class="muted">not sampled</span>`;
  return `cpus ${trim(u.cpus, 2)} · mem ${fmtMiB(u.memMb)}${u.gpus ? ` · gpus ${u.gpus}` : ''}`;
}

export function Page() {
  const view = useLive('/api/v1/roles', ['roles', 'tasks', 'frameworks', 'agents']);
  const pre = useLive('/api/v1/preemptions', ['preemptions']);
  const v = view.data;
  const total = v?.total ?? { cpus: 0, mem: 0, disk: 0, gpus: 0 };
  const roles = [...(v?.roles ?? [])].sort((a, b) => b.weightedShare - a.weightedShare || a.role.localeCompare(b.role));
  const latest = [...(pre.data?.preemptions ?? [])].reverse().slice(0, 20);
  const classes = v?.priorityClasses;

  return html`<div class="page tenants">
    <header class="pagehead"><h1>Tenants</h1><span class="muted">roles and principals: what they hold and use, their quotas and DRF shares${classes ? html` · priority classes ${classes.names.join(' > ')} (default ${classes.default})` : ''}</span></header>
    <${ErrorNote} error=${view.error} />
    <${Table} label="roles" rows=${roles} rowKey=${(r) => r.role}
      empty=${view.loading ? 'Loading…' : 'No roles hold anything yet.'}
      onOpen=${() => { location.hash = '#/tasks'; }}
      columns=${[
        { key: 'role', title: 'Role', render: (r) => html`<b>${r.role}</b>` },
        { key: 'frameworks', title: 'Frameworks', align: 'right' },
        { key: 'tasks', title: 'Tasks', align: 'right' },
        { key: 'cpus', title: 'CPUs', align: 'right', render: (r) => held(r, total, 'cpus', (x) => trim(x, 2)) },
        { key: 'mem', title: 'Memory', align: 'right', render: (r) => held(r, total, 'mem', fmtMiB) },
        { key: 'gpus', title: 'GPUs', align: 'right', render: (r) => held(r, total, 'gpus', (x) => trim(x)) },
        { key: 'used', title: 'Used', render: (r) => used(r.used) },
        { key: 'guarantee', title: 'Guarantee', render: (r) => amounts(r.guarantee) },
        { key: 'limit', title: 'Limit', render: (r) => amounts(r.limit) },
        { key: 'weight', title: 'Weight', align: 'right', render: (r) => trim(r.weight, 2) },
        { key: 'share', title: 'DRF share', width: '12em', render: (r) => html`<${Bar} used=${r.share} total=${1} label=${`${pct(r.share)}${r.weight !== 1 ? ` (÷${trim(r.weight, 2)}: ${pct(r.weightedShare)})` : ''}`} />` },
      ]} />
    <h2>Principals</h2>
    <${Table} label="principals" rows=${v?.principals ?? []} rowKey=${(p) => p.principal || '(none)'}
      empty=${view.loading ? 'Loading…' : 'Nobody runs anything yet.'}
      columns=${[
        { key: 'principal', title: 'Principal', render: (p) => html`<b>${p.principal || html`<span class="muted">(none)</span>`}</b>` },
        { key: 'roles', title: 'Roles', render: (p) => html`<span class="chips">${p.roles.map((r) => html`<span class="chip">${r}</span>`)}</span>` },
        { key: 'tasks', title: 'Tasks', align: 'right' },
        { key: 'cpus', title: 'CPUs', align: 'right', render: (p) => held(p, total, 'cpus', (x) => trim(x, 2)) },
        { key: 'mem', title: 'Memory', align: 'right', render: (p) => held(p, total, 'mem', fmtMiB) },
        { key: 'gpus', title: 'GPUs', align: 'right', render: (p) => held(p, total, 'gpus', (x) => trim(x)) },
        { key: 'used', title: 'Used', render: (p) => used(p.used) },
        { key: 'share', title: 'DRF share', width: '12em', render: (p) => html`<${Bar} used=${p.share} total=${1} label=${pct(p.share)} />` },
      ]} />
    <h2>Preemptions</h2>
    <${Table} label="preemptions" rows=${latest} rowKey=${(p) => p.id}
      empty=${pre.loading ? 'Loading…' : 'No preemptions.'}
      columns=${[
        { key: 'at', title: 'When', render: (p) => html`<${When} ms=${p.atMs} ago />` },
        { key: 'for', title: 'For', render: (p) => html`<b>${p.preemptor.for || p.preemptor.name}</b> <span class="muted">${p.preemptor.role}</span>` },
        { key: 'cause', title: 'Cause', render: (p) => (p.cause === 'priority' ? `class ${p.preemptor.priorityClass}` : 'guarantee') },
        { key: 'victims', title: 'Victims', render: (p) => html`${p.victims.length} <span class="muted">${p.victims.slice(0, 3).map((x) => x.taskId).join(', ')}${p.victims.length > 3 ? ', …' : ''}</span>` },
      ]} />
  </div>`;
}
