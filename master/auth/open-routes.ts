// The dashboard's routes that need no token (http-hooks.ts lets exactly these through): its
// static files, which hold no data, and the redemption of a one-time login link, whose code
// is the credential. Named by the route a request is matched to. Kept beside http-hooks.ts
// rather than in ui/: authentication sits below the dashboard (the master's import layers).

/** GET/HEAD: the page and its files (master/ui/static-files.ts). */
export const STATIC_UI_ROUTES: ReadonlySet<string> = new Set(['/ui', '/ui/', '/ui/*']);

/** POST: a login link's code traded for its token (master/ui/login-links.ts). */
export const REDEEM_ROUTE = '/api/v1/ui/redeem';
