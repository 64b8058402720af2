// A task's log, streamed as it is written: the master's followed log (NDJSON chunks, each
// starting where the last ended) read from byte 0, picked up again from the last offset on
// another master when the stream breaks. stdout/stderr switch, "follow" keeps the view at the
// end as text arrives, and the download button saves the whole file.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import { html } from '../html.js';

/** Past this much text only the end is kept on screen (the download has it all). */
const MAX_SHOWN = 2 * 1024 * 1024;

export function LogView({ taskId }) {
  const [stream, setStream] = useState('stdout');
  const [follow, setFollow] = useState(true);
  const [text, setText] = useState('');
  const [cut, setCut] = useState(false);
  const [status, setStatus] = useState('connecting');
  const [error, setError] = useState(null);
  const pre = useRef(null);
  const followRef = useRef(follow);
  followRef.current = follow;

  useEffect(() => {
    const ctl = new AbortController();
    let offset = 0;
    let buf = '';
    let pending = false;
    setText('');
    setCut(false);
    setError(null);
    setStatus('connecting');
    const flush = () => {
      pending = false;
      if (buf.length > MAX_SHOWN) {
        buf = buf.slice(buf.length - MAX_SHOWN);
        setCut(true);
      }
      setText(buf);
    };
    (async () => {
      let eof = false;
      let failures = 0;
      while (!eof && !ctl.signal.aborted) {
        try {
          setStatus('streaming');
          await api.stream(`/api/v1/tasks/${encodeURIComponent(taskId)}/logs?stream=${stream}&follow=true&offset=${offset}`, (chunk) => {
            failures = 0;
            if (chunk.data) {
              buf += chunk.data;
              if (!pending) {
                pending = true;
                requestAnimationFrame(flush);
              }
            }
            if (typeof chunk.nextOffset === 'number') offset = chunk.nextOffset;
            if (chunk.eof) eof = true;
          }, ctl.signal);
          setError(null);
        } catch (err) {
          if (ctl.signal.aborted) return;
          failures++;
          setError(err);
        }
        if (!eof && !ctl.signal.aborted) await new Promise((r) => setTimeout(r, Math.min(5000, 300 * 2 ** Math.min(failures, 4))));
      }
      if (!ctl.signal.aborted) setStatus(eof ? 'ended' : 'stopped');
    })();
    return () => ctl.abort();
  }, [taskId, stream]);

  useEffect(() => {
    if (follow && pre.current) pre.current.scrollTop = pre.current.scrollHeight;
  }, [text, follow]);

  const onScroll = () => {
    const el = pre.current;
    if (!el) return;
    const atEnd = el.scrollHeight - el.scrollTop - el.clientHeight < 8;
    if (atEnd !== followRef.current) setFollow(atEnd);
  };

  const download = async () => {
    const parts = [];
    let offset = 0;
    for (let i = 0; i < 10_000; i++) {
      const c = await api.get(`/api/v1/tasks/${encodeURIComponent(taskId)}/logs?stream=${stream}&offset=${offset}`);
      if (c.data) parts.push(c.data);
      if (c.eof || !c.data || c.nextOffset === offset) break;
      offset = c.nextOffset;
    }
    const url = URL.createObjectURL(new Blob(parts, { type: 'text/plain' }));
    const a = document.createElement('a');
    a.href = url;
    a.download = `${taskId}.${stream}.log`;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  };

  return html`<section class="log" aria-label="log">
    <div class="logbar">
      <div class="seg" role="tablist">
        ${['stdout', 'stderr'].map((s) => html`<button role="tab" aria-selected=${s === stream} class=${s === stream ? 'on' : ''} onClick=${() => setStream(s)}>${s}</button>`)}
      </div>
      <label><input type="checkbox" checked=${follow} onChange=${(e) => setFollow(e.target.checked)} /> follow</label>
      <button onClick=${download}>Download</button>
      <span class="muted">${status}${cut ? ' · showing the last 2 MiB' : ''}</span>
      ${error ? html`<span class="error">${error.message}</span>` : null}
    </div>
    <pre ref=${pre} class="logtext" data-log=${stream} onScroll=${onScroll}>${text || html`<span class="muted">${status === 'ended' ? '(empty)' : '(nothing written yet)'}</span>`}</pre>
  </section>`;
}
