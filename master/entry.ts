// The master daemon's entry: all that a command line (`cairn master`, `cairn up`) may use of
// the master to start one: startMaster and its options, and the security it is started with
// (its principals from a credentials file, made once in the data dir when none is given, its
// ACLs and the endpoints it answers without a credential). Everything else of master/ is the
// master's own; what the command line shares with it (specs, validators, answers' shapes)
// lives in shared/. The import rule `cli-imports-only-daemon-entries` keeps it so.

export { startMaster, type MasterHandle, type MasterOptions } from './server.ts';
export { MasterAuth, type MasterAuthOptions } from './auth/master-auth.ts';
export { bootstrapCredentials, loadCredentials, type BootstrapCredentials } from './auth/credentials.ts';
export { parseAcls } from './auth/acls.ts';
