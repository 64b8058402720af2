// A real terminal for tests: a tmux server of the test's own (its socket in the test's
// directory, so no other tmux is touched), whose windows run programs on a pseudo-terminal as
// a person's would. Each window's output is copied to a log file (pipe-pane) that the test
// reads with the terminal's escape sequences taken out. A shell window runs commands typed
// into it one at a time, each between markers the shell prints, so the test knows where a
// command's output starts and ends and what its exit code was.

import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from './processes.ts';

/** Escape sequences (CSI, OSC, charset and keypad modes) and carriage returns. */
const ESCAPES = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>]|\r/g;

/** npx's spinner (braille frames), which it erases on the terminal before the program's output. */
const SPINNER = /[\u2800-\u28ff]/g;

export function plainText(raw: string): string {
  return raw.replace(ESCAPES, '').replace(SPINNER, '');
}

export interface StepResult {
  /** What the command printed, stdout and stderr as the terminal showed them. */
  output: string;
  /** Its exit code ($?). */
  code: number;
}

export class TmuxTerminal {
  private readonly socket: string;
  private steps = 0;

  /** Starts the server with one window, `first`, running `command` in `cwd`, with exactly `env`. */
  /** The commands to tmux run with the terminal's environment too: new windows take their PATH from the client. */
  constructor(
    private readonly dir: string,
    private readonly env: Record<string, string>,
    first: { name: string; command: string; cwd: string },
  ) {
    this.socket = join(dir, 'tmux.sock');
    // A wide window: long lines are not wrapped into the log.
    execFileSync('tmux', ['-S', this.socket, '-f', '/dev/null', 'new-session', '-d', '-s', 'readme', '-n', first.name, '-x', '250', '-y', '50', '-c', first.cwd, first.command], { env, stdio: 'ignore' });
    this.tmux('set-option', '-g', 'remain-on-exit', 'on');
    this.tmux('set-option', '-g', 'history-limit', '50000');
    this.pipe(first.name);
  }

  private tmux(...args: string[]): string {
    return execFileSync('tmux', ['-S', this.socket, ...args], { encoding: 'utf8', env: this.env });
  }

  private logOf(window: string): string {
    return join(this.dir, `${window}.log`);
  }

  private pipe(window: string): void {
    this.tmux('pipe-pane', '-t', `readme:${window}`, '-o', `cat >> ${this.logOf(window)}`);
  }

  /**
   * A new window running the script `file` with bash in `cwd`. It starts only once its output
   * is piped to the log, so that nothing it prints, even at once, is missed.
   */
  openScript(name: string, file: string, cwd: string): void {
    const gate = join(this.dir, `${name}.piped`);
    this.tmux('new-window', '-d', '-n', name, '-c', cwd, `while [ ! -e ${gate} ]; do sleep 0.05; done; exec bash --norc --noprofile ${file}`);
    this.pipe(name);
    writeFileSync(gate, '');
  }

  /** Everything the window has printed so far, escape sequences taken out. */
  text(window: string): string {
    const file = this.logOf(window);
    return existsSync(file) ? plainText(readFileSync(file, 'utf8')) : '';
  }

  /** Types Ctrl-C into the window. */
  interrupt(window: string): void {
    this.tmux('send-keys', '-t', `readme:${window}`, 'C-c');
  }

  /** Types a line (literally) and Enter. */
  type(window: string, line: string): void {
    this.tmux('send-keys', '-t', `readme:${window}`, '-l', line);
    this.tmux('send-keys', '-t', `readme:${window}`, 'Enter');
  }

  /**
   * Runs `command` in the shell of `window` as if typed there (it is sourced, so `cd` and
   * variables carry over to the next command), and returns its output and exit code.
   * `interruptWhen`: type Ctrl-C once the output matches, for a command that runs until then.
   */
  async run(window: string, command: string, opts: { timeoutMs?: number; interruptWhen?: RegExp } = {}): Promise<StepResult> {
    const n = ++this.steps;
    const file = join(this.dir, `step-${n}.sh`);
    writeFileSync(file, `${command}\n`);
    // The markers are printed by printf from a format, so the typed line itself never matches them.
    this.type(window, `printf '\\n::start %s::\\n' ${n}; . ${file}; __rc=$?; printf '\\n::rc %s %s::\\n' ${n} "$__rc"; (exit $__rc)`);
    const started = `::start ${n}::\n`;
    const ended = new RegExp(`\\n::rc ${n} (\\d+)::`);
    const slice = () => {
      const all = this.text(window);
      const at = all.indexOf(started);
      return at < 0 ? undefined : all.slice(at + started.length);
    };
    const timeoutMs = opts.timeoutMs ?? 90_000;
    if (opts.interruptWhen) {
      const re = opts.interruptWhen;
      await waitFor(`output matching ${re} from: ${command}`, () => (re.test(slice() ?? '') ? true : undefined), timeoutMs, 100);
      this.interrupt(window);
      // Ctrl-C may end the typed line with the command (bash drops the rest of a list whose
      // command died of SIGINT), so the code is asked for again at once: typed after the
      // Ctrl-C, it runs once the shell is back. Had the line gone on to its own end marker,
      // that one comes first and is the one read.
      this.type(window, `printf '\\n::rc %s %s::\\n' ${n} "$?"`);
    }
    try {
      return await waitFor(`the end of: ${command}`, () => {
        const s = slice();
        const m = s === undefined ? null : ended.exec(s);
        return m ? { output: s!.slice(0, m.index), code: Number(m[1]) } : undefined;
      }, timeoutMs, 100);
    } catch (err) {
      // Ctrl-C, so that the shell is free for what comes next.
      this.interrupt(window);
      throw new Error(`${(err as Error).message}; it printed:\n${(slice() ?? '').slice(-3000)}`);
    }
  }

  /** Ends every window's program and the server. */
  close(): void {
    try {
      this.tmux('kill-server');
    } catch {
      // Already gone.
    }
  }
}
