// Who may do what, in the shape of Mesos' ACLs: per action, a list of rules, each naming
// principals (a subject) and objects (roles, users, the principals of frameworks, agents,
// masters). The first rule whose principals and objects both match decides: allowed,
// unless its objects are `{"type": "NONE"}`, which denies. When no rule matches,
// `permissive` decides (true unless the file says otherwise, as in Mesos).
//
// Pure: parsing and deciding read no file and no clock.

import { CairnError } from '../../shared/errors.ts';

/** Each action and the name of its object field, as in the file. */
export const ACL_ACTIONS = {
  register_frameworks: 'roles',
  run_tasks: 'users',
  view_tasks: 'framework_principals',
  kill_tasks: 'framework_principals',
  teardown_frameworks: 'framework_principals',
  update_weights: 'roles',
  update_quotas: 'roles',
  drain_agents: 'agents',
  update_masters: 'masters',
  /** Priority classes above the default (the default class is everyone's). */
  use_priority_classes: 'priority_classes',
} as const;

export type AclAction = keyof typeof ACL_ACTIONS;

/** `{"type": "ANY"}`, `{"type": "NONE"}` or `{"values": [...]}`. */
export type Entity = { readonly kind: 'any' } | { readonly kind: 'none' } | { readonly kind: 'values'; readonly values: ReadonlySet<string> };

interface Rule {
  readonly principals: Entity;
  readonly objects: Entity;
}

export interface AclDecision {
  readonly allowed: boolean;
  /** Why, for the 403 and the audit log. */
  readonly reason: string;
}

/** `roles` → `role`, `priority_classes` → `priority_class`: the object as one. */
function singular(field: string): string {
  return field.endsWith('classes') ? field.slice(0, -2) : field.replace(/s$/, '');
}

function matches(e: Entity, value: string): boolean {
  if (e.kind === 'any' || e.kind === 'none') return true;
  if (e.values.has(value)) return true;
  // A role's rule covers its children: `ml` matches `ml/alice` (hierarchical roles).
  for (const v of e.values) if (v.endsWith('/*') && value.startsWith(v.slice(0, -1))) return true;
  return false;
}

export class Acls {
  constructor(
    private readonly rules: ReadonlyMap<AclAction, readonly Rule[]>,
    readonly permissive: boolean,
  ) {}

  /** Allows everything: a master without an ACL file. */
  static permissiveDefault(): Acls {
    return new Acls(new Map(), true);
  }

  decide(action: AclAction, principal: string, object: string): AclDecision {
    const rules = this.rules.get(action) ?? [];
    for (let i = 0; i < rules.length; i++) {
      const r = rules[i]!;
      if (r.principals.kind === 'none') continue;
      if (!matches(r.principals, principal) || !matches(r.objects, object)) continue;
      return r.objects.kind === 'none'
        ? { allowed: false, reason: `${action}[${i}] denies principal '${principal}'` }
        : { allowed: true, reason: `${action}[${i}]` };
    }
    return this.permissive
      ? { allowed: true, reason: 'permissive' }
      : { allowed: false, reason: `no rule of ${action} lets principal '${principal}' act on ${singular(ACL_ACTIONS[action])} '${object}'` };
  }

  /** Throws CAIRN_FORBIDDEN when the action is not allowed. */
  require(action: AclAction, principal: string, object: string, field?: string): void {
    const d = this.decide(action, principal, object);
    if (!d.allowed) throw new CairnError('CAIRN_FORBIDDEN', d.reason, field);
  }
}

function parseEntity(v: unknown, field: string): Entity {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new CairnError('CAIRN_BAD_ACLS', 'must be {"type": "ANY"}, {"type": "NONE"} or {"values": [...]}', field);
  const o = v as Record<string, unknown>;
  if ('type' in o) {
    if (o.type === 'ANY') return { kind: 'any' };
    if (o.type === 'NONE') return { kind: 'none' };
    throw new CairnError('CAIRN_BAD_ACLS', `type must be ANY or NONE, got ${JSON.stringify(o.type)}`, `${field}.type`);
  }
  if (!Array.isArray(o.values) || o.values.length === 0 || o.values.some((x) => typeof x !== 'string' || x.length === 0 || x.length > 256)) {
    throw new CairnError('CAIRN_BAD_ACLS', 'values must be a non-empty list of names', `${field}.values`);
  }
  return { kind: 'values', values: new Set(o.values as string[]) };
}

/** Parses an ACL file's text; an unknown action or field is an error that names it. */
export function parseAcls(text: string, source = 'acls'): Acls {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new CairnError('CAIRN_BAD_ACLS', `${source} is not JSON: ${(err as Error).message}`, source);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new CairnError('CAIRN_BAD_ACLS', 'must be a JSON object', source);
  const rules = new Map<AclAction, Rule[]>();
  let permissive = true;
  for (const [key, value] of Object.entries(doc)) {
    if (key === 'permissive') {
      if (typeof value !== 'boolean') throw new CairnError('CAIRN_BAD_ACLS', 'must be true or false', `${source}.permissive`);
      permissive = value;
      continue;
    }
    if (!(key in ACL_ACTIONS)) {
      throw new CairnError('CAIRN_BAD_ACLS', `unknown action '${key}' (known: permissive, ${Object.keys(ACL_ACTIONS).join(', ')})`, `${source}.${key}`);
    }
    const action = key as AclAction;
    const objectField = ACL_ACTIONS[action];
    if (!Array.isArray(value)) throw new CairnError('CAIRN_BAD_ACLS', 'must be a list of rules', `${source}.${key}`);
    rules.set(action, value.map((r: unknown, i) => {
      const field = `${source}.${key}[${i}]`;
      if (typeof r !== 'object' || r === null) throw new CairnError('CAIRN_BAD_ACLS', 'must be an object', field);
      for (const k of Object.keys(r)) {
        if (k !== 'principals' && k !== objectField) throw new CairnError('CAIRN_BAD_ACLS', `unknown field '${k}' (a ${key} rule has principals and ${objectField})`, `${field}.${k}`);
      }
      const o = r as Record<string, unknown>;
      if (!('principals' in o)) throw new CairnError('CAIRN_BAD_ACLS', 'missing', `${field}.principals`);
      if (!(objectField in o)) throw new CairnError('CAIRN_BAD_ACLS', 'missing', `${field}.${objectField}`);
      return { principals: parseEntity(o.principals, `${field}.principals`), objects: parseEntity(o[objectField], `${field}.${objectField}`) };
    }));
  }
  return new Acls(rules, permissive);
}
