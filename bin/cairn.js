#!/usr/bin/env node
// The `cairn` command. Cairn ships its TypeScript sources and runs them through tsx,
// so `npm install` is the whole setup: there is no build step to forget.
import { register } from 'tsx/esm/api';
register();
await import('./cairn.ts');
