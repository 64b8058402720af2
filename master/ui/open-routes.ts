// The dashboard's routes that need no token (master/auth/http-hooks.ts lets exactly these
// through): its static files, which hold no data, and the redemption of a one-time login
// link, whose code is the credential. Named by the route a request is matched to.

/** GET/HEAD: the page and its files (static-files.ts). */
export const STATIC_UI_ROUTES: ReadonlySet<string> = new Set(['/ui', '/ui/', '/ui/*']);

/** POST: a login link's code traded for its token (login-links.ts). */
export const REDEEM_ROUTE = '/api/v1/ui/redeem';
