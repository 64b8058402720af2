// Keyboard shortcuts: one keydown handler for the page. Two-key sequences (`g c`) jump
// between pages, `/` focuses the page's filter box, `?` toggles the help, Escape closes it
// or leaves a box. The list that was used last (a Table or a VirtualList) takes j/k, the
// arrows, PageUp/PageDown, Home/End and Enter.

export const SHORTCUTS = [
  ['g c', 'cluster'],
  ['g t', 'tasks'],
  ['g s', 'services'],
  ['g j', 'training jobs'],
  ['g e', 'experiments'],
  ['g r', 'tenants (roles)'],
  ['/', 'filter this page'],
  ['j / ↓, k / ↑', 'move the selection'],
  ['PageDown, PageUp, Home, End', 'move the selection further'],
  ['Enter', 'open the selected row'],
  ['Backspace', 'back'],
  ['?', 'this help'],
  ['Esc', 'close the help, leave a box'],
];

const GOTO = { c: '#/cluster', t: '#/tasks', s: '#/services', j: '#/jobs', e: '#/experiments', r: '#/tenants' };
const LIST_KEYS = new Set(['j', 'k', 'ArrowDown', 'ArrowUp', 'PageDown', 'PageUp', 'Home', 'End', 'Enter']);

const lists = [];
let active = null;

/** A list takes the selection keys while it is the last one used (or the first shown). */
export function registerList(handler) {
  lists.push(handler);
  return {
    activate() {
      active = handler;
    },
    remove() {
      const i = lists.indexOf(handler);
      if (i >= 0) lists.splice(i, 1);
      if (active === handler) active = null;
    },
  };
}

function typing(target) {
  const tag = target?.tagName;
  return tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT' || target?.isContentEditable;
}

export function installKeys({ toggleHelp, closeHelp }) {
  let pendingG = 0;
  document.addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === 'Escape') {
      closeHelp();
      if (typing(e.target)) e.target.blur();
      return;
    }
    if (typing(e.target)) return;
    if (pendingG && Date.now() - pendingG < 1500) {
      pendingG = 0;
      const to = GOTO[e.key];
      if (to) {
        e.preventDefault();
        location.hash = to;
      }
      return;
    }
    if (e.key === 'g') {
      pendingG = Date.now();
      return;
    }
    if (e.key === '?') {
      e.preventDefault();
      toggleHelp();
      return;
    }
    if (e.key === '/') {
      const box = document.querySelector('[data-filter]');
      if (box) {
        e.preventDefault();
        box.focus();
        box.select?.();
      }
      return;
    }
    if (e.key === 'Backspace') {
      e.preventDefault();
      history.back();
      return;
    }
    if (LIST_KEYS.has(e.key)) {
      // A focused button or link keeps its own Enter.
      if (e.key === 'Enter' && (e.target?.tagName === 'A' || e.target?.tagName === 'BUTTON')) return;
      const list = active && lists.includes(active) ? active : lists[0];
      if (list && list(e.key)) e.preventDefault();
    }
  });
}
