// The dashboard's shell: the login form (a token, or a `cairn ui` link's one-time code), the
// navigation, the page whose route matches location.hash, a banner while no master answers,
// and the keyboard shortcuts (see keys.js; `?` lists them).
import { render, Component } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { html } from './html.js';
import { api, redeemFromHash } from './api.js';
import { startLive, useConnected, useLeader } from './live.js';
import { installKeys, SHORTCUTS } from './keys.js';
import { PAGES } from './pages/index.js';

function useHash() {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return hash;
}

class Boundary extends Component {
  state = { error: null };
  componentDidCatch(error) {
    this.setState({ error });
  }
  componentDidUpdate(prev) {
    if (prev.hash !== this.props.hash && this.state.error) this.setState({ error: null });
  }
  render() {
    if (this.state.error) return html`<div class="page"><p class="error" role="alert">This page failed: ${String(this.state.error.message ?? this.state.error)}</p></div>`;
    return this.props.children;
  }
}

function Login({ reason, onDone }) {
  const [value, setValue] = useState('');
  const [error, setError] = useState(reason);
  useEffect(() => setError(reason), [reason]);
  const submit = async (e) => {
    e.preventDefault();
    api.setToken(value);
    try {
      await api.get('/api/v1/roles');
      onDone();
    } catch (err) {
      setError(err.status === 401 || err.status === 403 ? 'That token was refused.' : err.message);
    }
  };
  return html`<form class="login" onSubmit=${submit}>
    <h1>Cairn</h1>
    <p>Paste a token (a principal's secret), or open the link <code>cairn ui</code> prints.</p>
    ${error ? html`<p class="error" role="alert">${error}</p>` : null}
    <input type="password" autocomplete="current-password" aria-label="token" placeholder="token" value=${value} onInput=${(e) => setValue(e.target.value)} autofocus />
    <button type="submit">Log in</button>
  </form>`;
}

function Help({ onClose }) {
  return html`<div class="overlay" onClick=${onClose}>
    <div class="help" role="dialog" aria-label="keyboard shortcuts" onClick=${(e) => e.stopPropagation()}>
      <h2>Keyboard</h2>
      <table>${SHORTCUTS.map(([k, what]) => html`<tr><td><kbd>${k}</kbd></td><td>${what}</td></tr>`)}</table>
      <p class="muted">Esc closes this.</p>
    </div>
  </div>`;
}

function Banner() {
  const [s, setS] = useState(api.status());
  useEffect(() => api.onStatus(setS), []);
  if (s.reachable) return null;
  return html`<div class="banner" role="alert">No master answers (${s.error}). Trying ${[s.current, ...s.masters.filter((m) => m !== s.current)].join(', ')} again…</div>`;
}

function Shell({ hash }) {
  const connected = useConnected();
  const hello = useLeader();
  const [s, setS] = useState(api.status());
  useEffect(() => api.onStatus(setS), []);
  let page = null;
  let match = null;
  for (const p of PAGES) {
    match = p.route.pattern.exec(hash);
    if (match) {
      page = p;
      break;
    }
  }
  useEffect(() => {
    document.title = page ? `${page.route.title} · Cairn` : 'Cairn';
  }, [page]);
  const section = (p) => hash.startsWith(`#/${p.route.nav?.toLowerCase()}`) || (p.route.pattern.test(hash));
  return html`<div class="shell">
    <header class="top">
      <a class="brand" href="#/cluster">Cairn</a>
      <nav aria-label="pages">
        ${PAGES.filter((p) => p.route.nav).map((p) => {
          const href = p.route.pattern.source.replace(/^\^/, '').replace(/\$$/, '').replace(/\\\//g, '/').replace(/\(\?:.*$/, '');
          return html`<a href=${href} class=${section(p) ? 'on' : ''}>${p.route.nav}</a>`;
        })}
      </nav>
      <span class="spacer"></span>
      <span class=${`live ${connected ? 'on' : ''}`} title=${`${connected ? 'live updates on' : 'live updates reconnecting'} · ${s.current.replace(/^https?:\/\//, '')}`}>${connected ? 'live' : 'reconnecting'}</span>
      <span class="muted master" title="the master answering">${s.current.replace(/^https?:\/\//, '')}${hello?.role ? ` (${hello.role})` : ''}</span>
      <button class="link" onClick=${() => window.dispatchEvent(new Event('cairn-help'))} aria-label="keyboard shortcuts">?</button>
      <button class="link" onClick=${() => api.logout()}>log out</button>
    </header>
    <${Banner} />
    <main>
      <${Boundary} hash=${hash}>
        ${page ? html`<${page.Page} key=${page.route.title} match=${match} />` : html`<div class="page"><p>No page at ${hash}. <a href="#/cluster">The cluster</a>.</p></div>`}
      <//>
    </main>
  </div>`;
}

function App() {
  const hash = useHash();
  const [login, setLogin] = useState(api.token() ? null : '');
  const [help, setHelp] = useState(false);
  useEffect(() => api.onLoginNeeded((reason) => setLogin(reason ?? '')), []);
  useEffect(() => {
    const toggle = () => setHelp((h) => !h);
    window.addEventListener('cairn-help', toggle);
    installKeys({ toggleHelp: toggle, closeHelp: () => setHelp(false) });
    return () => window.removeEventListener('cairn-help', toggle);
  }, []);
  useEffect(() => {
    if (!location.hash || location.hash === '#' || location.hash === '#/') location.replace('#/cluster');
  }, [hash]);
  if (login !== null) return html`<${Login} reason=${login} onDone=${() => setLogin(null)} />`;
  return html`<${Shell} hash=${hash} />${help ? html`<${Help} onClose=${() => setHelp(false)} />` : null}`;
}

await redeemFromHash();
startLive();
const root = document.getElementById('app');
root.textContent = '';
render(html`<${App} />`, root);
