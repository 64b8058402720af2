// A long list with fixed-height rows: only the rows in view (and a few around) exist in the
// page, so 10,000 tasks scroll as lightly as 50. `renderRow(i)` draws row i (or a placeholder
// while its page loads); `onRange(first, last)` says which rows are in view, for paginated
// reads. The keyboard selection works as in Table.
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { html } from '../html.js';
import { registerList } from '../keys.js';

const OVERSCAN = 5;

export function VirtualList({ count, rowHeight = 28, renderRow, onRange, onOpen, header, label, className = '' }) {
  const box = useRef(null);
  const [top, setTop] = useState(0);
  const [height, setHeight] = useState(600);
  const [sel, setSel] = useState(-1);
  const state = useRef({});
  state.current = { count, sel, onOpen, height, rowHeight };
  const reg = useRef(null);
  const frame = useRef(0);

  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return undefined;
    setHeight(el.clientHeight || 600);
    const ro = new ResizeObserver(() => setHeight(el.clientHeight || 600));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  const onScroll = () => {
    if (frame.current) return;
    frame.current = requestAnimationFrame(() => {
      frame.current = 0;
      if (box.current) setTop(box.current.scrollTop);
    });
  };

  const first = Math.max(0, Math.floor(top / rowHeight) - OVERSCAN);
  const last = Math.min(count - 1, Math.ceil((top + height) / rowHeight) + OVERSCAN);

  useEffect(() => {
    onRange?.(first, last);
  }, [first, last, count]);

  useEffect(() => {
    const handler = (key) => {
      const { count: n, sel: s, onOpen: open, height: h, rowHeight: rh } = state.current;
      if (n === 0) return false;
      const page = Math.max(1, Math.floor(h / rh) - 1);
      let next = s;
      if (key === 'j' || key === 'ArrowDown') next = Math.min(n - 1, s + 1);
      else if (key === 'k' || key === 'ArrowUp') next = Math.max(0, s - 1);
      else if (key === 'PageDown') next = Math.min(n - 1, s + page);
      else if (key === 'PageUp') next = Math.max(0, s - page);
      else if (key === 'Home') next = 0;
      else if (key === 'End') next = n - 1;
      else if (key === 'Enter') {
        if (s >= 0 && s < n && open) open(s);
        return true;
      }
      setSel(next);
      // Keep the selection in view.
      const el = box.current;
      if (el) {
        const y = next * rh;
        if (y < el.scrollTop) el.scrollTop = y;
        else if (y + rh > el.scrollTop + el.clientHeight) el.scrollTop = y + rh - el.clientHeight;
      }
      return true;
    };
    reg.current = registerList(handler);
    return () => reg.current.remove();
  }, []);

  // Rows are keyed by their slot, not their index: scrolling reuses the same elements with new
  // content instead of making and dropping a screenful of them every frame.
  const slots = Math.max(1, last - first + 1 + 2 * OVERSCAN);
  const rows = [];
  for (let i = first; i <= last; i++) {
    rows.push(html`<div key=${i % slots} class=${`vrow${i === sel ? ' sel' : ''}${i % 2 ? ' odd' : ''}`} role="row" aria-rowindex=${i + 1} aria-selected=${i === sel}
      style=${`transform:translateY(${i * rowHeight}px);height:${rowHeight}px`}
      onClick=${() => { setSel(i); reg.current?.activate(); }}
      onDblClick=${() => onOpen?.(i)}>${renderRow(i)}</div>`);
  }
  return html`<div class=${`vlist ${className}`} role="grid" aria-label=${label} aria-rowcount=${count}>
    ${header ? html`<div class="vhead" role="row">${header}</div>` : null}
    <div class="vbox" ref=${box} onScroll=${onScroll}>
      <div class="vspace" style=${`height:${count * rowHeight}px`}>${rows}</div>
    </div>
  </div>`;
}
