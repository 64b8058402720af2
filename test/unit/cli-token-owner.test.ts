// The CLI credentials file keeps one token per master URL, and `cairn up` replaces one only
// for the same cluster: a second `cairn up` on a URL another cluster holds (even one that
// then fails to listen) must never take that cluster's token away. And a taken port is
// reported with the flag that changes it.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findToken, mayReplace, saveToken, type SavedCredential } from '../../shared/sdk/credentials.ts';
import { clusterIdOf, readClusterId } from '../../bin/commands/daemons/cluster-id.ts';
import { takenPortMessage } from '../../bin/commands/daemons/port-taken.ts';

const dirs: string[] = [];
const tmp = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'cairn-token-owner-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const URL_A = 'http://127.0.0.1:5050';
const first: SavedCredential = { principal: 'admin', token: 'token-of-the-first', cluster: 'c-1', dataDir: '/data/one' };
const second: SavedCredential = { principal: 'admin', token: 'token-of-the-second', cluster: 'c-2', dataDir: '/data/two' };
/** Both clusters' data dirs still hold their ids. */
const bothLive = (dir: string) => ({ '/data/one': 'c-1', '/data/two': 'c-2' })[dir];

describe('mayReplace: a saved token is replaced only by the same cluster', () => {
  it('fills an empty place', () => {
    expect(mayReplace(undefined, second, bothLive)).toBe(true);
    expect(mayReplace({ principal: 'admin', token: '' }, second, bothLive)).toBe(true);
  });

  it("keeps another live cluster's token", () => {
    expect(mayReplace(first, second, bothLive)).toBe(false);
  });

  it("replaces the same cluster's token (a new secret in the same data dir)", () => {
    expect(mayReplace(first, { ...first, token: 'rotated' }, bothLive)).toBe(true);
  });

  it('replaces the token of a cluster whose data dir no longer holds its id (removed, or made again)', () => {
    expect(mayReplace(first, second, () => undefined)).toBe(true);
    expect(mayReplace(first, second, (dir) => (dir === '/data/one' ? 'c-9' : undefined))).toBe(true);
  });

  it('an entry without a cluster (written before clusters were named): replaced only by the very same token', () => {
    const legacy = { principal: 'admin', token: 'token-of-the-first' };
    expect(mayReplace(legacy, first, bothLive)).toBe(true);
    expect(mayReplace(legacy, second, bothLive)).toBe(false);
  });
});

describe('saveToken', () => {
  it("leaves the file byte for byte when another cluster holds the URL, and says so", () => {
    const env = { CAIRN_CONFIG_DIR: tmp() };
    const path = saveToken([URL_A], first, env, bothLive).path;
    const before = readFileSync(path);
    const r = saveToken([`${URL_A}/`], second, env, bothLive);
    expect(r).toEqual({ path, saved: [], kept: [{ url: URL_A, held: first }] });
    expect(readFileSync(path).equals(before)).toBe(true);
    expect(findToken(URL_A, env)).toBe(first.token);
  });

  it("saves the URLs no other cluster holds and keeps the one that another does", () => {
    const env = { CAIRN_CONFIG_DIR: tmp() };
    saveToken([URL_A], first, env, bothLive);
    const r = saveToken([URL_A, 'http://127.0.0.1:5051'], second, env, bothLive);
    expect(r.saved).toEqual(['http://127.0.0.1:5051']);
    expect(r.kept.map((k) => k.url)).toEqual([URL_A]);
    expect(findToken(URL_A, env)).toBe(first.token);
    expect(findToken('http://127.0.0.1:5051', env)).toBe(second.token);
  });

  it("takes the place of a cluster that is gone: its data dir was removed", () => {
    const env = { CAIRN_CONFIG_DIR: tmp() };
    const gone = tmp();
    const one = { ...first, cluster: clusterIdOf(gone), dataDir: gone };
    saveToken([URL_A], one, env, readClusterId);
    expect(saveToken([URL_A], second, env, readClusterId).kept).toHaveLength(1);
    rmSync(gone, { recursive: true });
    expect(saveToken([URL_A], second, env, readClusterId).saved).toEqual([URL_A]);
    expect(JSON.parse(readFileSync(join(env.CAIRN_CONFIG_DIR, 'credentials'), 'utf8')).masters[URL_A]).toEqual(second);
  });
});

describe('clusterIdOf', () => {
  it('is made once per data dir and read back the same', () => {
    const d = tmp();
    expect(readClusterId(d)).toBeUndefined();
    const id = clusterIdOf(d);
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(clusterIdOf(d)).toBe(id);
    expect(clusterIdOf(tmp())).not.toBe(id);
  });
});

describe('takenPortMessage', () => {
  const flags = [{ port: 5050, flag: '--port' }, { port: 8053, flag: '--dns-port' }, { port: 7946, flag: '--gossip-port' }];

  it("names the port and its flag, from a socket's error or a message that carries one", () => {
    const listen = Object.assign(new Error('listen EADDRINUSE: address already in use 127.0.0.1:5050'), { code: 'EADDRINUSE', port: 5050 });
    expect(takenPortMessage(listen, flags)).toBe('port 5050 is taken (another cairn up, or another program, listens on it): give another with --port');
    const dns = new Error('cannot serve DNS on 127.0.0.1:8053: bind EADDRINUSE 127.0.0.1:8053');
    expect(takenPortMessage(dns, flags)).toMatch(/^port 8053 is taken .*--dns-port$/);
    const gossip = Object.assign(new Error('bind EADDRINUSE 127.0.0.1:7946'), { code: 'EADDRINUSE', port: 7946 });
    expect(takenPortMessage(gossip, flags)).toMatch(/^port 7946 is taken .*--gossip-port$/);
  });

  it('leaves other errors to be told as they are', () => {
    expect(takenPortMessage(Object.assign(new Error('listen EACCES: permission denied 0.0.0.0:80'), { code: 'EACCES', port: 80 }), flags)).toBeUndefined();
    expect(takenPortMessage('nothing', flags)).toBeUndefined();
  });
});
