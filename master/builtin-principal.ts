// The built-in frameworks' principal, a name below every layer that refers to it: auth
// authenticates it, the DNS zone and SUBSCRIBE reserve the built-ins' names for it, the host
// calls as it.

/**
 * Whom the master's built-in frameworks (services, jobs, tuning) call its scheduler API as.
 * '+' is not allowed in a credentials file's names, so no user can be this principal.
 */
export const BUILTIN_PRINCIPAL = 'cairn+builtin';
