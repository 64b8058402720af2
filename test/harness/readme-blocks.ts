// The README's shell blocks as a test runs them: the ```sh fences of chosen `##` sections
// (their `###` subsections included), each split into steps — one command as a shell reads
// it, continuation lines and loops included — with the comment lines under a step kept as
// its notes. A block preceded by `<!-- illustrative: REASON -->` is not run; the reason says
// why. Pure: whether a piece of text is a whole command is asked of the caller (bash -n).

export interface ReadmeStep {
  /** The command as written (trailing comments included). */
  command: string;
  /** The `# ...` lines under it: what the README says it prints. */
  notes: string[];
}

export interface ReadmeBlock {
  section: string;
  /** 1-based line of the opening fence. */
  line: number;
  text: string;
  /** Set when the block is marked illustrative: why it cannot run as a test. */
  illustrative?: string;
  steps: ReadmeStep[];
}

const ILLUSTRATIVE = /^<!--\s*illustrative:\s*(.+?)\s*-->\s*$/;

/** The `##` section each line belongs to (its title), or undefined before the first. */
function sectionTitles(lines: readonly string[]): (string | undefined)[] {
  let current: string | undefined;
  let fenced = false;
  return lines.map((l) => {
    if (/^```/.test(l)) fenced = !fenced;
    else if (!fenced && /^## /.test(l)) current = l.slice(3).trim();
    return current;
  });
}

/**
 * The ```sh blocks of the sections whose titles `wanted` names (a title starting with one of
 * them), in order. `isComplete(text)` says whether text is whole commands (no open quote,
 * loop or continuation).
 */
export function readmeBlocks(markdown: string, wanted: readonly string[], isComplete: (text: string) => boolean): ReadmeBlock[] {
  const lines = markdown.split('\n');
  const titles = sectionTitles(lines);
  const blocks: ReadmeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^```(sh|bash|shell)\s*$/.test(lines[i])) {
      if (/^```/.test(lines[i])) {
        // Skip any other fenced block whole, so its lines are never read as fences.
        const end = lines.findIndex((l, j) => j > i && /^```\s*$/.test(l));
        i = end < 0 ? lines.length : end;
      }
      continue;
    }
    const end = lines.findIndex((l, j) => j > i && /^```\s*$/.test(l));
    if (end < 0) throw new Error(`README line ${i + 1}: a shell block that is never closed`);
    const section = titles[i];
    const body = lines.slice(i + 1, end);
    if (section !== undefined && wanted.some((w) => section.startsWith(w))) {
      let k = i - 1;
      while (k >= 0 && lines[k].trim() === '') k--;
      const mark = k >= 0 ? ILLUSTRATIVE.exec(lines[k]) : null;
      blocks.push({
        section,
        line: i + 1,
        text: body.join('\n'),
        ...(mark ? { illustrative: mark[1] } : {}),
        steps: splitSteps(body, isComplete, i + 2),
      });
    }
    i = end;
  }
  return blocks;
}

/** A block's lines as steps: comment lines are the previous step's notes. */
export function splitSteps(lines: readonly string[], isComplete: (text: string) => boolean, firstLine = 1): ReadmeStep[] {
  const steps: ReadmeStep[] = [];
  let pending: string[] = [];
  let pendingFrom = 0;
  lines.forEach((line, n) => {
    if (pending.length === 0) {
      if (line.trim() === '') return;
      if (/^\s*#/.test(line)) {
        steps.at(-1)?.notes.push(line.replace(/^\s*#\s?/, ''));
        return;
      }
      pendingFrom = n;
    }
    pending.push(line);
    const text = pending.join('\n');
    if (!/\\$/.test(line) && isComplete(text)) {
      steps.push({ command: text, notes: [] });
      pending = [];
    }
  });
  if (pending.length > 0) throw new Error(`README line ${firstLine + pendingFrom}: a command that does not end within its block: ${pending[0]}`);
  return steps;
}
