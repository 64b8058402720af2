// The PromQL reader the dashboard test relies on: it must find every metric an expression
// reads, and nothing else (labels, functions, keywords, ranges, Grafana variables).

import { describe, expect, it } from 'vitest';
import { dashboardExpressions, promqlMetricNames } from '../harness/promql-names.ts';

describe('promqlMetricNames', () => {
  it('finds the metrics and leaves out functions, labels, keywords, ranges and variables', () => {
    const expr = 'histogram_quantile(0.95, sum by (le) (rate(cairn_jobs_queue_wait_seconds_bucket{job="x", le!="1e3"}[$__rate_interval]) and on (instance) (cairn_master_is_leader == 1)))';
    expect([...promqlMetricNames(expr)].sort()).toEqual(['cairn_jobs_queue_wait_seconds_bucket', 'cairn_master_is_leader']);
    expect([...promqlMetricNames('max by (role) (cairn_master_role_cpus{kind="allocated"}) / ignoring(kind) max without (kind) (cairn_master_role_cpus offset 5m) * 1e3')]).toEqual(['cairn_master_role_cpus']);
    expect([...promqlMetricNames('sum(increase(cairn_master_preemptions_total[1h])) > bool 0 or vector(0)')]).toEqual(['cairn_master_preemptions_total']);
  });

  it("walks a dashboard's panels and its rows' panels", () => {
    const d = { panels: [{ title: 'a', targets: [{ expr: 'x' }] }, { title: 'row', panels: [{ title: 'b', targets: [{ expr: 'y' }, {}] }] }] };
    expect(dashboardExpressions(d)).toEqual([{ panel: 'a', expr: 'x' }, { panel: 'b', expr: 'y' }]);
  });
});
