// A plain table with a keyboard selection: j/k or the arrows move it, Enter opens the row
// (onOpen), a click selects, a double click opens. For lists of a few hundred rows; longer
// ones use VirtualList.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from '../html.js';
import { registerList } from '../keys.js';

// rowClass?(row): a class of the row's own (an early-stopped trial, say).
export function Table({ columns, rows, rowKey, onOpen, empty = 'Nothing here yet.', label, rowClass }) {
  const [sel, setSel] = useState(-1);
  const body = useRef(null);
  const state = useRef({ rows, sel, onOpen });
  state.current = { rows, sel, onOpen };
  const reg = useRef(null);

  useEffect(() => {
    const handler = (key) => {
      const { rows: rs, sel: s, onOpen: open } = state.current;
      if (rs.length === 0) return false;
      const page = 10;
      let next = s;
      if (key === 'j' || key === 'ArrowDown') next = Math.min(rs.length - 1, s + 1);
      else if (key === 'k' || key === 'ArrowUp') next = Math.max(0, s - 1);
      else if (key === 'PageDown') next = Math.min(rs.length - 1, s + page);
      else if (key === 'PageUp') next = Math.max(0, s - page);
      else if (key === 'Home') next = 0;
      else if (key === 'End') next = rs.length - 1;
      else if (key === 'Enter') {
        if (s >= 0 && s < rs.length && open) open(rs[s]);
        return true;
      }
      setSel(next);
      return true;
    };
    reg.current = registerList(handler);
    return () => reg.current.remove();
  }, []);

  useEffect(() => {
    const tr = body.current?.children[sel];
    tr?.scrollIntoView?.({ block: 'nearest' });
  }, [sel]);

  return html`<table class="grid" aria-label=${label}>
    <thead><tr>${columns.map((c) => html`<th style=${c.width ? `width:${c.width}` : ''} class=${c.align === 'right' ? 'num' : ''}>${c.title}</th>`)}</tr></thead>
    <tbody ref=${body}>
      ${rows.length === 0 ? html`<tr class="empty"><td colspan=${columns.length}>${empty}</td></tr>` : null}
      ${rows.map((row, i) => html`<tr key=${rowKey(row)} class=${[i === sel ? 'sel' : '', rowClass?.(row) ?? ''].filter(Boolean).join(' ')} aria-selected=${i === sel}
          onClick=${() => { setSel(i); reg.current?.activate(); }}
          onDblClick=${() => onOpen?.(row)}>
        ${columns.map((c) => html`<td class=${c.align === 'right' ? 'num' : ''}>${c.render ? c.render(row) : row[c.key]}</td>`)}
      </tr>`)}
    </tbody>
  </table>`;
}
