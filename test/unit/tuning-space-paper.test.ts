// The tuning paper's parameter file: bounds and number lists, its trailing commas tolerated,
// and every refusal naming the field to fix.

import { describe, expect, it } from 'vitest';
import { refusal } from '../harness/refusal.ts';
import { locateJsonError, parsePaperSpace, stripTrailingCommas } from '../../shared/tuning/space/paper-format.ts';

const params = (list: unknown[]) => JSON.stringify({ parameters: list });

describe('parsePaperSpace', () => {
  it("reads the paper's example, trailing comma included", () => {
    const text =
      '{"parameters": [{"name": "lr", "type": "bound", "value": [0.001, 0.1]}, ' +
      '{"name": "batch_size", "type": "number", "value": [16, 32, 64]}],}';
    expect(parsePaperSpace(text)).toEqual({
      params: [
        { kind: 'double', name: 'lr', low: 0.001, high: 0.1, log: false },
        { kind: 'categorical', name: 'batch_size', choices: [{ value: 16 }, { value: 32 }, { value: 64 }] },
      ],
    });
  });

  it('tolerates trailing commas in lists and objects across lines, but not inside strings', () => {
    const text = `{
      "parameters": [
        {"name": "a,]", "type": "number", "value": [1, 2,],},
        {"name": "b", "type": "bound", "value": [0, 1,
        ],},
      ],
    }`;
    const space = parsePaperSpace(text);
    expect(space.params.map((p) => p.name)).toEqual(['a,]', 'b']);
    expect(space.params[0]).toEqual({ kind: 'categorical', name: 'a,]', choices: [{ value: 1 }, { value: 2 }] });
  });

  it('blanks only the commas that close a list or object, keeping every offset', () => {
    expect(stripTrailingCommas('[1, 2, ]')).toBe('[1, 2  ]');
    expect(stripTrailingCommas('{"a": ",}", }')).toBe('{"a": ",}"  }');
    expect(stripTrailingCommas('{"a": "\\",}",}')).toBe('{"a": "\\",}" }');
    // Two commas in a row stay an error.
    expect(stripTrailingCommas('[1,,]')).toBe('[1, ]');
  });

  it('says where the text stops being JSON', () => {
    const text = '{\n  "parameters": [\n    {"name": "lr" "type": "bound"}\n  ]\n}';
    const err = refusal(() => parsePaperSpace(text));
    expect(err.field).toBe('document');
    expect(err.message).toMatch(/not valid JSON at line 3, column 19: expected ',' or '}'/);

    expect(refusal(() => parsePaperSpace('{"parameters": [}')).message).toMatch(/line 1, column 17: expected a value/);
    expect(refusal(() => parsePaperSpace('{"parameters": [1, 2')).message).toMatch(/line 1, column 21: unexpected end of text/);
    expect(refusal(() => parsePaperSpace('')).message).toMatch(/line 1, column 1/);
    expect(locateJsonError('{"a": [1, 2]}')).toBeUndefined();
    expect(locateJsonError('{"a": tru}')).toEqual({ offset: 6, reason: 'expected a value' });
  });

  it('refuses a document without a usable parameters list', () => {
    expect(refusal(() => parsePaperSpace('[1]')).field).toBe('document');
    const missing = refusal(() => parsePaperSpace('{"params": []}'));
    expect(missing.field).toBe('parameters');
    expect(missing.message).toMatch(/missing/);
    expect(refusal(() => parsePaperSpace('{"parameters": []}')).message).toMatch(/^parameters: is empty/);
    expect(refusal(() => parsePaperSpace('{"parameters": {}}')).field).toBe('parameters');
  });

  it('refuses a parameter with no name, or a name used twice', () => {
    const bound = { type: 'bound', value: [0, 1] };
    expect(refusal(() => parsePaperSpace(params([{ name: 'a', ...bound }, bound]))).field).toBe('parameters[1].name');
    expect(refusal(() => parsePaperSpace(params([{ name: '', ...bound }]))).field).toBe('parameters[0].name');
    const dup = refusal(() => parsePaperSpace(params([{ name: 'lr', ...bound }, { name: 'x', ...bound }, { name: 'lr', ...bound }])));
    expect(dup.field).toBe('parameters[2].name');
    expect(dup.message).toMatch(/duplicate name "lr" \(also parameters\[0\]\.name\)/);
    expect(refusal(() => parsePaperSpace(params([7]))).field).toBe('parameters[0]');
  });

  it('refuses an unknown type, listing the known ones', () => {
    const err = refusal(() => parsePaperSpace(params([{ name: 'lr', type: 'float', value: [0, 1] }])));
    expect(err.field).toBe('parameters.lr.type');
    expect(err.message).toMatch(/unknown type "float"; known types: bound, number/);
    expect(refusal(() => parsePaperSpace(params([{ name: 'lr', value: [0, 1] }]))).message).toMatch(/parameters\.lr\.type: missing/);
  });

  it('refuses a bound that is not two finite numbers in order', () => {
    for (const value of [[1], [1, 2, 3], [1, '2'], 'x', [null, 1]]) {
      const err = refusal(() => parsePaperSpace(params([{ name: 'lr', type: 'bound', value }])));
      expect(err.field).toBe('parameters.lr.value');
      expect(err.message).toMatch(/two finite numbers/);
    }
    expect(() => parsePaperSpace(params([{ name: 'lr', type: 'bound', value: [0.1, 0.001] }]))).toThrow(
      /parameters\.lr\.value.*low > high \(0\.1 > 0\.001\)/,
    );
    // A bound of one value is a constant, not an error.
    expect(parsePaperSpace(params([{ name: 'lr', type: 'bound', value: [2, 2] }])).params[0]).toMatchObject({ low: 2, high: 2 });
  });

  it('refuses an empty, non-numeric or repeating number list', () => {
    const empty = refusal(() => parsePaperSpace(params([{ name: 'bs', type: 'number', value: [] }])));
    expect(empty.field).toBe('parameters.bs.value');
    expect(empty.message).toMatch(/at least one/);
    const text = refusal(() => parsePaperSpace(params([{ name: 'bs', type: 'number', value: [16, '32'] }])));
    expect(text.field).toBe('parameters.bs.value[1]');
    expect(text.message).toMatch(/finite number, got "32"/);
    expect(refusal(() => parsePaperSpace(params([{ name: 'bs', type: 'number', value: 16 }]))).field).toBe('parameters.bs.value');
    const dup = refusal(() => parsePaperSpace(params([{ name: 'bs', type: 'number', value: [16, 32, 16] }])));
    expect(dup.field).toBe('parameters.bs.value[2]');
  });

  it('refuses unknown keys and two names passed in one environment variable', () => {
    const log = refusal(() => parsePaperSpace(params([{ name: 'lr', type: 'bound', value: [0, 1], log: true }])));
    expect(log.field).toBe('parameters.lr.log');
    const env = refusal(() =>
      parsePaperSpace(params([
        { name: 'batch-size', type: 'number', value: [1] },
        { name: 'batch_size', type: 'number', value: [2] },
      ])),
    );
    expect(env.field).toBe('parameters.batch_size');
    expect(env.message).toMatch(/CAIRN_PARAM_BATCH_SIZE/);
    // A name that is no identifier is quoted in the field.
    expect(refusal(() => parsePaperSpace(params([{ name: 'a b', type: 'bound', value: [1, 0] }]))).field).toBe('parameters["a b"].value');
  });
});
