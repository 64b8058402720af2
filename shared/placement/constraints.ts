// Marathon's placement constraints, as a pure check: may one more instance go to an agent
// with these facts, given where the others already are? `hostname` is the agent's host
// name; any other field is an agent attribute. An agent without the attribute fails every
// operator but UNLIKE (nothing to be unlike).

export const CONSTRAINT_OPERATORS = ['UNIQUE', 'CLUSTER', 'GROUP_BY', 'LIKE', 'UNLIKE', 'MAX_PER', 'IS'] as const;
export type ConstraintOperator = (typeof CONSTRAINT_OPERATORS)[number];

export interface Constraint {
  /** `hostname` or an agent attribute's name. */
  field: string;
  operator: ConstraintOperator;
  value?: string;
}

export interface AgentFacts {
  hostname: string;
  attributes: Readonly<Record<string, string>>;
}

export function fieldValue(agent: AgentFacts, field: string): string | undefined {
  if (field === 'hostname' || field === '@hostname') return agent.hostname;
  return agent.attributes[field];
}

/**
 * Where a group's instances are, by constraint field: value → count. Kept per group while a
 * round of offers is placed, so each check is a map lookup.
 */
export class ConstraintTracker {
  private readonly counts = new Map<string, Map<string, number>>();

  constructor(
    private readonly constraints: readonly Constraint[],
    /** Values of each field seen on any agent (GROUP_BY spreads over them). */
    private readonly knownValues: ReadonlyMap<string, ReadonlySet<string>>,
  ) {
    for (const c of constraints) if (!this.counts.has(c.field)) this.counts.set(c.field, new Map());
  }

  add(agent: AgentFacts): void {
    for (const [field, m] of this.counts) {
      const v = fieldValue(agent, field);
      if (v !== undefined) m.set(v, (m.get(v) ?? 0) + 1);
    }
  }

  /** The first constraint `agent` breaks, or undefined when it may take one more instance. */
  broken(agent: AgentFacts): Constraint | undefined {
    for (const c of this.constraints) if (!this.allows(c, agent)) return c;
    return undefined;
  }

  private allows(c: Constraint, agent: AgentFacts): boolean {
    const v = fieldValue(agent, c.field);
    const counts = this.counts.get(c.field)!;
    if (v === undefined) return c.operator === 'UNLIKE';
    switch (c.operator) {
      case 'UNIQUE':
        return (counts.get(v) ?? 0) === 0;
      case 'CLUSTER':
        if (c.value !== undefined && c.value !== '') return v === c.value;
        // No value: all instances on the value the first one got.
        for (const [other, n] of counts) if (n > 0 && other !== v) return false;
        return true;
      case 'IS':
        return v === c.value;
      case 'LIKE':
        return new RegExp(`^(?:${c.value})$`).test(v);
      case 'UNLIKE':
        return !new RegExp(`^(?:${c.value})$`).test(v);
      case 'MAX_PER':
        return (counts.get(v) ?? 0) < Number(c.value);
      case 'GROUP_BY': {
        // Spread evenly: this value may take one more only if no other value has fewer.
        const mine = counts.get(v) ?? 0;
        const values = new Set([...(this.knownValues.get(c.field) ?? []), ...counts.keys()]);
        for (const other of values) if ((counts.get(other) ?? 0) < mine) return false;
        return true;
      }
    }
  }
}
