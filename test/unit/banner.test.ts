import { describe, expect, it } from 'vitest';
import { renderBanner, wantsBanner } from '../../bin/commands/daemons/banner.ts';

const logs = { format: 'text', level: 'info' };

describe('daemon banner', () => {
  it('cairn up: every master, the agent, DNS, the data dir, where the credentials are, and how to stop', () => {
    const text = renderBanner({
      daemon: 'up',
      version: '1.2.3',
      masters: ['http://127.0.0.1:6050', 'http://127.0.0.1:6051', 'http://127.0.0.1:6052'],
      agent: { url: 'http://127.0.0.1:5051', id: 'abc-S0' },
      dns: { host: '127.0.0.1', port: 8053, domain: 'cairn' },
      dataDir: '/srv/cairn',
      credentials: '/srv/cairn/credentials.json',
      cliToken: '/home/u/.config/cairn/credentials',
      logs,
    });
    expect(text).toBe([
      '',
      'cairn up 1.2.3: 3 masters and an agent, running',
      '',
      '  masters      http://127.0.0.1:6050, http://127.0.0.1:6051, http://127.0.0.1:6052',
      '  agent        http://127.0.0.1:5051  (id abc-S0)',
      '  DNS          127.0.0.1:8053, zone cairn  (try: dig @127.0.0.1 -p 8053 leader.cairn)',
      '  data dir     /srv/cairn',
      '  credentials  /srv/cairn/credentials.json',
      '  CLI token    saved in /home/u/.config/cairn/credentials',
      '  logs         text at info, on stderr (--log-format, --log-level)',
      '',
      '  Try: CAIRN_MASTER=http://127.0.0.1:6050,http://127.0.0.1:6051,http://127.0.0.1:6052 cairn run -- echo hello',
      '  Ctrl-C stops the agent (its tasks are killed) and the masters.',
      '',
      '',
    ].join('\n'));
  });

  it('cairn master on the default URL needs no CAIRN_MASTER; no DNS is said so', () => {
    const text = renderBanner({ daemon: 'master', version: '1', masters: ['http://127.0.0.1:5050'], dataDir: '/d', credentials: '/d/credentials.json', logs: { format: 'json', level: 'debug' } });
    expect(text).toContain('cairn master 1: master, running');
    expect(text).toContain('  DNS          not served\n');
    expect(text).toContain('  Try: cairn run -- echo hello\n');
    expect(text).toContain('  logs         json at debug,');
    expect(text).toContain('  Ctrl-C stops the master.\n');
  });

  it('cairn agent: its URL, whom it registers with, its work dir, and that its tasks outlive it', () => {
    const text = renderBanner({ daemon: 'agent', version: '1', agent: { url: 'http://10.0.0.5:5051' }, follows: '', workDir: '/w', agentCredential: '/etc/cairn/agent.json', logs });
    expect(text).toContain('  agent           http://10.0.0.5:5051\n');
    expect(text).toContain('  registers with  the leader gossip names\n');
    expect(text).toContain('  work dir        /w\n');
    expect(text).toContain('  credential      /etc/cairn/agent.json\n');
    expect(text).not.toContain('DNS');
    expect(text).not.toContain('Try:');
    expect(text).toContain('its tasks keep running');
  });

  it('DNS on every interface is tried through loopback; port 53 needs no -p', () => {
    const text = renderBanner({ daemon: 'master', version: '1', masters: ['http://h:5050'], dns: { host: '0.0.0.0', port: 53, domain: 'mesos' }, logs });
    expect(text).toContain('0.0.0.0:53, zone mesos  (try: dig @127.0.0.1 leader.mesos)');
  });

  it('never prints a secret: only what it is given, and it is given paths', () => {
    const text = renderBanner({ daemon: 'up', version: '1', masters: ['http://127.0.0.1:5050'], agent: { url: 'http://127.0.0.1:5051' }, credentials: '/d/credentials.json', cliToken: '/c/credentials', logs });
    expect(text).not.toMatch(/secret|token [A-Za-z0-9_-]{20,}/i);
    expect(text).toContain('and the master.\n');
  });

  it('is for a terminal: stdout or stderr', () => {
    expect(wantsBanner({ stdout: { isTTY: true }, stderr: {} })).toBe(true);
    expect(wantsBanner({ stdout: {}, stderr: { isTTY: true } })).toBe(true);
    expect(wantsBanner({ stdout: { isTTY: false }, stderr: {} })).toBe(false);
  });
});
