import { describe, expect, it } from 'vitest';
import { Resources } from '../../shared/resources.ts';
import { CairnError } from '../../shared/errors.ts';

describe('Resources', () => {
  it('adds without float drift: 0.1 + 0.2 cpus is 0.3 cpus', () => {
    const sum = Resources.of({ cpus: 0.1 }).add(Resources.of({ cpus: 0.2 }));
    expect(sum.equals(Resources.of({ cpus: 0.3 }))).toBe(true);
    expect(sum.cpus).toBe(0.3);
    let acc = Resources.EMPTY;
    for (let i = 0; i < 1000; i++) acc = acc.add(Resources.of({ cpus: 0.001 }));
    expect(acc.cpus).toBe(1);
    for (let i = 0; i < 1000; i++) acc = acc.subtract(Resources.of({ cpus: 0.001 }));
    expect(acc.isEmpty()).toBe(true);
  });

  it("parses Mesos' text form and prints it back", () => {
    const r = Resources.parse('cpus:4;mem:8192;ports:[31000-32000]');
    expect(r.cpus).toBe(4);
    expect(r.mem).toBe(8192);
    expect(r.portCount()).toBe(1001);
    expect(r.toString()).toBe('cpus:4;mem:8192;ports:[31000-32000]');
    expect(Resources.parse('cpus(*):2; gpus:1; disk:10; ports:[1-2,5-6]').toString()).toBe('cpus:2;disk:10;gpus:1;ports:[1-2,5-6]');
  });

  it('refuses text that does not parse, naming the piece', () => {
    const cases: [string, string][] = [
      ['cpus', 'resources'],
      ['cpus:abc', 'resources.cpus'],
      ['cpus:-1', 'resources.cpus'],
      ['bogus:1', 'resources'],
      ['ports:31000-32000', 'resources.ports'],
      ['ports:[32000-31000]', 'resources.ports'],
      ['ports:[1-70000]', 'resources.ports'],
    ];
    for (const [text, field] of cases) {
      try {
        Resources.parse(text);
        expect.unreachable(`'${text}' should not parse`);
      } catch (err) {
        expect(err).toBeInstanceOf(CairnError);
        expect((err as CairnError).field).toBe(field);
        expect((err as CairnError).code).toBe('CAIRN_BAD_RESOURCES');
      }
    }
  });

  it('contains and subtracts ranges exactly', () => {
    const agent = Resources.parse('cpus:2;mem:100;ports:[31000-31010]');
    const task = Resources.parse('cpus:1;mem:50;ports:[31003-31004]');
    expect(agent.contains(task)).toBe(true);
    const left = agent.subtract(task);
    expect(left.toString()).toBe('cpus:1;mem:50;ports:[31000-31002,31005-31010]');
    expect(left.contains(task)).toBe(false);
    expect(() => left.subtract(task)).toThrow(CairnError);
    expect(left.add(task).equals(agent)).toBe(true);
  });

  it('round-trips Mesos v1 JSON and takes ports', () => {
    const r = Resources.parse('cpus:0.5;mem:32;gpus:1;ports:[31000-31001,31005-31005]');
    expect(Resources.fromMesos(r.toMesos()).equals(r)).toBe(true);
    expect(r.takePorts(3)!.toString()).toBe('ports:[31000-31001,31005-31005]');
    expect(r.takePorts(4)).toBeUndefined();
    expect(() => Resources.fromMesos([{ name: 'cpus', scalar: { value: 'x' } }], 'task.resources')).toThrow(/task.resources\[0\].scalar.value/);
  });
});
