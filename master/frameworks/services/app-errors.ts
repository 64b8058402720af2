// Marathon's error answers: `{message, details: [{path, errors}]}` with 422 for an invalid
// app, 409 for an app locked by a deployment or one that exists, 404 for one that does not.
// Clients built for Marathon read `details[].path` to point at the field.

export interface ValidationDetail {
  path: string;
  errors: string[];
}

export class MarathonError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly details?: ValidationDetail[],
    readonly extra?: Record<string, unknown>,
  ) {
    super(message);
  }

  body(): Record<string, unknown> {
    return { message: this.message, ...(this.details ? { details: this.details } : {}), ...(this.extra ?? {}) };
  }
}

export function invalid(details: ValidationDetail[]): MarathonError {
  return new MarathonError(422, 'Object is not valid', details);
}

export function unknownApp(id: string): MarathonError {
  return new MarathonError(404, `App '${id}' does not exist`);
}

export function lockedBy(appId: string, deploymentIds: string[]): MarathonError {
  return new MarathonError(409, `App is locked by one or more deployments. Override with the option '?force=true'. View details at '/v2/deployments/<DEPLOYMENT_ID>'.`, undefined, {
    deployments: deploymentIds.map((id) => ({ id })),
  });
}
