// A parallel-coordinates plot of an experiment's trials, in SVG: one axis per parameter
// (numeric ones scaled to their range, log when the space says so; categorical ones with a
// tick per choice), the metric last, one line per trial coloured by its metric (the best
// brightest; grey without one; dashed: stopped early), with a legend of that colour scale
// beneath. Pointing at a line highlights it; clicking opens the trial.
// Props: { space, trials, metricName, type: 'maximize'|'minimize', height?, onOpen?(index) }

import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { html } from '../html.js';
import { formatNumber, parallelAxes, parallelLayout } from './series.js';

const clip = (s, n = 14) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** The colour scale: worst to best with the metric's values at the ends, then what grey and dashes mean. */
function Legend({ legend, metricName, type }) {
  const gradient = `linear-gradient(to right, ${legend.stops.join(', ')})`;
  return html`<div class="pc-legend" role="group" aria-label="colour scale">
    <span>${metricName} (${type === 'minimize' ? 'lower is better' : 'higher is better'}):</span>
    <span class="pc-end" data-end="worst">${legend.worst === undefined ? 'worst' : formatNumber(legend.worst)}</span>
    <span class="pc-ramp" style=${{ background: gradient }}></span>
    <span class="pc-end" data-end="best">${legend.best === undefined ? 'best' : formatNumber(legend.best)}</span>
    <span class="pc-key"><svg width="28" height="8"><line x1="0" x2="28" y1="4" y2="4" stroke="#9aa0a6" stroke-width="2" stroke-dasharray="2 3" /></svg> no value</span>
    <span class="pc-key"><svg width="28" height="8"><line x1="0" x2="28" y1="4" y2="4" stroke="#5f6368" stroke-width="2" stroke-dasharray="7 4" /></svg> stopped early</span>
  </div>`;
}

export function ParallelCoords({ space, trials, metricName, type, height = 280, onOpen }) {
  const box = useRef(null);
  const [width, setWidth] = useState(800);
  const [hover, setHover] = useState(null);
  useEffect(() => {
    const el = box.current;
    const measure = () => el.clientWidth > 0 && setWidth(el.clientWidth);
    measure();
    const r = new ResizeObserver(measure);
    r.observe(el);
    return () => r.disconnect();
  }, []);

  const layout = useMemo(() => {
    const axes = parallelAxes(space, trials, metricName);
    return parallelLayout({ axes, trials, type, width, height, margin: { top: 30, right: 56, bottom: 16, left: 56 } });
  }, [space, trials, metricName, type, width, height]);

  const hovered = hover === null ? undefined : layout.lines.find((l) => l.index === hover);
  return html`<div class="parallel-coords" ref=${box} style=${{ width: '100%' }}>
    <svg width=${width} height=${height} role="img" aria-label=${`Parameters of ${trials.length} trials against ${metricName}`}
      style=${{ display: 'block', font: '11px system-ui, sans-serif' }} onMouseLeave=${() => setHover(null)}>
      <g class="lines" fill="none">
        ${layout.lines.map((l) => html`<path key=${l.index} d=${l.d} stroke=${l.color}
          stroke-width=${hover === l.index ? 3.5 : 1.6} stroke-opacity=${hover === null || hover === l.index ? 0.9 : 0.15}
          stroke-dasharray=${l.earlyStopped ? '7 4' : l.quality === undefined ? '2 3' : undefined}
          data-early-stopped=${l.earlyStopped ? 'true' : undefined}
          style=${{ cursor: onOpen ? 'pointer' : 'default' }}
          onMouseEnter=${() => setHover(l.index)} onClick=${() => onOpen?.(l.index)}>
          <title>${`trial ${l.index}${l.earlyStopped ? ' (stopped early)' : ''}: ${metricName} ${l.value === undefined ? '–' : formatNumber(l.value)}`}</title>
        </path>`)}
        ${hovered ? html`<path d=${hovered.d} stroke=${hovered.color} stroke-width="3.5" pointer-events="none" />` : null}
      </g>
      ${layout.axes.map((a) => html`<g key=${a.name} class="axis">
        <line x1=${a.x} x2=${a.x} y1=${layout.top} y2=${layout.bottom} stroke="#5f6368" />
        <text x=${a.x} y=${layout.top - 12} text-anchor="middle" font-weight="600" fill="currentColor">
          ${clip(a.name, 18)}${a.log ? ' (log)' : ''}<title>${a.name}</title>
        </text>
        ${a.ticks.map((t) => html`<g key=${t.label}>
          <line x1=${a.x - 4} x2=${a.x} y1=${t.y} y2=${t.y} stroke="#5f6368" />
          <text x=${a.x - 6} y=${t.y + 3.5} text-anchor="end" fill="#5f6368" paint-order="stroke" stroke="white" stroke-width="3">${clip(t.label)}</text>
        </g>`)}
      </g>`)}
    </svg>
    <${Legend} legend=${layout.legend} metricName=${metricName} type=${type} />
    ${hovered ? html`<div class="muted" style=${{ minHeight: '1.4em' }}>trial ${hovered.index}${hovered.earlyStopped ? ' (stopped early)' : ''}: ${metricName} ${hovered.value === undefined ? '–' : formatNumber(hovered.value)}</div>`
      : html`<div class="muted" style=${{ minHeight: '1.4em' }}>Point at a line to see its trial${onOpen ? '; click to open it' : ''}.</div>`}
  </div>`;
}
