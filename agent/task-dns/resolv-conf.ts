// What a task's /etc/resolv.conf says (pure): the agent's task resolver as its one nameserver,
// and search domains that let a task reach its peers by short name, as pods do in Kubernetes:
// a task named `task.framework.domain` searches `framework.domain`, then `domain`, then the
// host's own search domains. So a job's replica reaches `NAME-master-0` (in
// `NAME-master-0.jobs.cairn`) and `NAME-master-0.NAME` (the replica under its job's name), and
// a Marathon app reaches `web` in `web.marathon.<domain>`.

/**
 * Names with fewer dots than this try the search list first. Two, not glibc's default one:
 * `NAME-master-0.NAME` has one dot and must be found under the task's framework before it is
 * asked of the world; a name with two or more (`x.jobs.cairn`, `pypi.org.` aside) is tried as
 * written first. The zone answers the extra search tries at once, so they cost little.
 */
export const TASK_NDOTS = 2;

/** glibc reads at most six search domains (MAXDNSRCH) and 256 characters of them. */
const MAX_SEARCH = 6;
const MAX_SEARCH_CHARS = 256;

/** The search list of a task whose DNS name is `dnsName` (`task.framework.domain`, or ''). */
export function taskSearchList(dnsName: string, domain: string | undefined, hostSearch: readonly string[]): string[] {
  const out: string[] = [];
  const add = (d: string) => {
    const name = d.toLowerCase().replace(/^\.+|\.+$/g, '');
    if (name === '' || out.includes(name) || out.length >= MAX_SEARCH) return;
    if ([...out, name].join(' ').length > MAX_SEARCH_CHARS) return;
    out.push(name);
  };
  const dot = dnsName.indexOf('.');
  if (dot > 0) add(dnsName.slice(dot + 1));
  if (domain) add(domain);
  for (const d of hostSearch) add(d);
  return out;
}

/** The resolver options every task gets (as Docker's DnsOptions takes them). */
export function taskResolverOptions(): string[] {
  return [`ndots:${TASK_NDOTS}`];
}

/** The whole file. */
export function taskResolvConf(nameserver: string, search: readonly string[]): string {
  const lines = ['# Written by the cairn agent: its task resolver answers the cluster zone and forwards the rest.', `nameserver ${nameserver}`];
  if (search.length > 0) lines.push(`search ${search.join(' ')}`);
  lines.push(`options ${taskResolverOptions().join(' ')}`);
  return `${lines.join('\n')}\n`;
}
