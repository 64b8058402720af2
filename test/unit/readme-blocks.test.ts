// The README's shell blocks as the README test reads them: which sections, which blocks are
// illustrative and why, and how a block splits into steps (bash -n decides what is whole).

import { describe, expect, it } from 'vitest';
import { bashComplete } from '../harness/bash-complete.ts';
import { readmeBlocks, splitSteps } from '../harness/readme-blocks.ts';


const DOC = [
  '# Title',
  '```sh',
  'echo not in a section',
  '```',
  '## Tour',
  'text',
  '```sh',
  'cairn run -- echo hi   # trailing comment',
  '# hi',
  '# (stderr: launched)',
  'echo $?',
  '```',
  '### Sub',
  '<!-- illustrative: needs 3 hosts -->',
  '',
  '```sh',
  'cairn up --masters 3',
  '```',
  '```yaml',
  '## Not a heading: inside a yaml block',
  '```',
  '```sh',
  'for f in a b; do',
  '  echo "$f" \\',
  '    done-ish',
  'done',
  "x='multi",
  "line'",
  '```',
  '## Other',
  '```sh',
  'echo other',
  '```',
].join('\n');

describe('readmeBlocks', () => {
  it('takes the sh blocks of the sections asked for, subsections included, with their lines', () => {
    const blocks = readmeBlocks(DOC, ['Tour'], bashComplete);
    expect(blocks.map((b) => [b.section, b.line, b.illustrative])).toEqual([
      ['Tour', 7, undefined],
      ['Tour', 16, 'needs 3 hosts'],
      ['Tour', 22, undefined],
    ]);
    expect(readmeBlocks(DOC, ['Other'], bashComplete).map((b) => b.text)).toEqual(['echo other']);
  });

  it('splits steps where bash sees whole commands, keeping comment lines as the step\'s notes', () => {
    const [first, , third] = readmeBlocks(DOC, ['Tour'], bashComplete);
    expect(first.steps).toEqual([
      { command: 'cairn run -- echo hi   # trailing comment', notes: ['hi', '(stderr: launched)'] },
      { command: 'echo $?', notes: [] },
    ]);
    expect(third.steps.map((s) => s.command)).toEqual(['for f in a b; do\n  echo "$f" \\\n    done-ish\ndone', "x='multi\nline'"]);
  });

  it('refuses a command left open at the end of its block, naming its line', () => {
    expect(() => splitSteps(['echo ok', 'for x in 1; do', '  echo $x'], bashComplete, 10)).toThrow(/README line 11: a command that does not end within its block: for x in 1; do/);
  });
});
