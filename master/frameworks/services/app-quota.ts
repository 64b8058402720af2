// What creating or changing an app adds to its owner's stored objects (sharing/quota-gate.ts):
// a change writes the app's record and one more version of its definition, each a copy of it,
// and replaces the record it had.

import { objectKey, type Admission, type ObjectQuotas } from '../../../shared/framework-host/quotas.ts';
import type { AppDefinition, StoredApp } from './app-model.ts';

/** `existing`: the app as stored now, when the change replaces it; its owner stays the owner charged. */
export function appAdmission(gate: ObjectQuotas, owner: string, app: AppDefinition, existing: StoredApp | undefined): Admission {
  const size = gate.sizeOf(app);
  return {
    owner: existing ? existing.owner ?? '' : owner,
    key: objectKey.app(app.id),
    bytesAfter: (current) => (current ?? 0) - (existing ? gate.sizeOf(existing) : 0) + 2 * size,
    what: `app '${app.id}'`,
    field: 'id',
  };
}
