#!/usr/bin/env bash
# Installs Cairn on this host: Node.js from Debian's packages when it is missing, the
# project under /opt/cairn, a `cairn` command in /usr/local/bin, and the systemd units
# cairn-agent.service and cairn-master.service. Idempotent: running it again with the
# same flags changes nothing; with other flags it rewrites what they change.
#
#   deploy/install.sh --master http://10.0.0.1:5050 --credential ./agent-h1.json --resources 'cpus:16;mem:61440;gpus:8'
#   deploy/install.sh --secret-file ./cluster.secret --join 10.0.0.1:7946 --credential ./agent-h1.json --enable agent
#   deploy/install.sh --enable master --master-id 1 --credentials ./credentials.json \
#       --peers 1=http://m1:5050,2=http://m2:5050,3=http://m3:5050 --secret-file ./cluster.secret
#   deploy/install.sh --root /tmp/stage ...   # everything under a staging root; no apt, no systemctl
#
# The agent unit uses KillMode=process: stopping or restarting the agent (an upgrade, a
# crash) ends the agent only; its tasks run on and the next agent re-attaches to them.
# Masters authenticate every agent and client: the agent unit passes the host's agent
# credential (/etc/cairn/agent-credential.json), the master unit the principals file
# (/etc/cairn/credentials.json) when one is installed, else the master makes its own
# (DATA_DIR/credentials.json) on first start.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: deploy/install.sh [options]
  --master URL[,URL...]   the masters the agent registers with (default http://127.0.0.1:5050)
  --join HOST:PORT        with --secret-file: any live gossip member (master or agent); gossip
                          tells the agent where the leader is. Without: a master's HTTP address
  --secret-file PATH      the cluster secret (installed as /etc/cairn/secret, mode 0600); with
                          it the agent and the master run gossip
  --work-dir DIR          the agent's work directory (default /var/lib/cairn/agent)
  --data-dir DIR          the master's data directory (default /var/lib/cairn/master)
  --resources TEXT        what the agent offers instead of measuring, e.g. 'cpus:8;mem:30720;gpus:2'
  --attributes TEXT       agent attributes, e.g. 'rack:r1;zone:a'
  --agent-port PORT       the agent's HTTP port (default 5051)
  --split-dns ADDR        the agent's task resolver answers on ADDR (e.g. 169.254.53.53), and
                          systemd-resolved sends the cluster zone there, so the host's own
                          processes resolve task names too (/etc/systemd/resolved.conf.d/cairn.conf)
  --dns-domain ZONE       the cluster's DNS zone, for --split-dns (default cairn)
  --docker-runtime NAME   the OCI runtime the agent's containers start with, one registered
                          with the Docker daemon (e.g. crun); default: the daemon's
  --credential FILE       the agent's credential, {"principal": "...", "secret": "..."} or a
                          credentials file with exactly one "agent": true entry; installed as
                          /etc/cairn/agent-credential.json (mode 0600). Required unless one is
                          installed already, or only the master is enabled (--enable master)
  --master-port PORT      the master's port (default 5050)
  --master-host ADDR      the address the master listens on (default 0.0.0.0, every interface:
                          agents and users on other hosts must reach it; `cairn master` alone
                          listens on 127.0.0.1)
  --credentials FILE      the masters' principals, {"credentials": [...]}; installed as
                          /etc/cairn/credentials.json (mode 0600); every master of a group needs
                          the same file. Without it (and none installed before) the master makes
                          DATA_DIR/credentials.json on first start, with an admin and an agent
                          principal
  --acls FILE             the masters' ACLs; installed as /etc/cairn/acls.json (mode 0600)
  --master-id N           this master's id in a replicated group (with --peers)
  --peers LIST            every master of the group: '1=http://m1:5050,2=http://m2:5050,...'
  --enable LIST           units to enable and (re)start: agent, master, or agent,master
                          (default: agent; none under --root)
  --root DIR              install into a staging root: no packages, no systemctl
  -h, --help              this text
A credential, credentials or ACL file installed once stays in use when the script runs again
without the flag; remove it from /etc/cairn and run the script again to stop using it.
EOF
}

die() {
  echo "install.sh: $*" >&2
  exit 1
}

ROOT=''
MASTERS=''
JOIN=''
SECRET_FILE=''
WORK_DIR=/var/lib/cairn/agent
DATA_DIR=/var/lib/cairn/master
RESOURCES=''
ATTRIBUTES=''
AGENT_PORT=5051
DOCKER_RUNTIME=''
SPLIT_DNS=''
DNS_DOMAIN=cairn
MASTER_PORT=5050
MASTER_HOST=0.0.0.0
AGENT_CREDENTIAL=''
MASTER_CREDENTIALS=''
MASTER_ACLS=''
MASTER_ID=''
PEERS=''
ENABLE='default'

while [ $# -gt 0 ]; do
  opt=$1
  val=''
  case "$opt" in
    --*=*) val=${opt#*=}; opt=${opt%%=*}; shift ;;
    -h|--help) usage; exit 0 ;;
    --*) [ $# -ge 2 ] || die "$opt needs a value"; val=$2; shift 2 ;;
    *) usage >&2; die "unexpected argument '$opt'" ;;
  esac
  case "$opt" in
    --master) MASTERS=$val ;;
    --join) JOIN=$val ;;
    --secret-file) SECRET_FILE=$val ;;
    --work-dir) WORK_DIR=$val ;;
    --data-dir) DATA_DIR=$val ;;
    --resources) RESOURCES=$val ;;
    --attributes) ATTRIBUTES=$val ;;
    --agent-port) AGENT_PORT=$val ;;
    --docker-runtime) DOCKER_RUNTIME=$val ;;
    --split-dns) SPLIT_DNS=$val ;;
    --dns-domain) DNS_DOMAIN=$val ;;
    --master-port) MASTER_PORT=$val ;;
    --master-host) MASTER_HOST=$val ;;
    --credential) AGENT_CREDENTIAL=$val ;;
    --credentials) MASTER_CREDENTIALS=$val ;;
    --acls) MASTER_ACLS=$val ;;
    --master-id) MASTER_ID=$val ;;
    --peers) PEERS=$val ;;
    --enable) ENABLE=$val ;;
    --root) ROOT=$val ;;
    *) usage >&2; die "unknown option $opt" ;;
  esac
done

# ------------------------------------------------------------------ checks

case "$WORK_DIR" in /*) ;; *) die "--work-dir must be an absolute path" ;; esac
case "$DATA_DIR" in /*) ;; *) die "--data-dir must be an absolute path" ;; esac
[[ "$AGENT_PORT" =~ ^[0-9]+$ ]] && [ "$AGENT_PORT" -le 65535 ] || die "--agent-port must be a port number"
[ -z "$DOCKER_RUNTIME" ] || [[ "$DOCKER_RUNTIME" =~ ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$ ]] || die "--docker-runtime must be a runtime name (letters, digits, '.', '_', '-'), got '$DOCKER_RUNTIME'"
[ -z "$SPLIT_DNS" ] || [[ "$SPLIT_DNS" =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]] || die "--split-dns must be an IPv4 address (e.g. 169.254.53.53), got '$SPLIT_DNS'"
[[ "$DNS_DOMAIN" =~ ^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$ ]] || die "--dns-domain must be a domain name (e.g. cairn), got '$DNS_DOMAIN'"
[[ "$MASTER_PORT" =~ ^[0-9]+$ ]] && [ "$MASTER_PORT" -le 65535 ] || die "--master-port must be a port number"
[[ "$MASTER_HOST" =~ ^[A-Za-z0-9.:_-]+$ ]] || die "--master-host must be an address or host name to listen on (e.g. 0.0.0.0 or 10.0.0.1), got '$MASTER_HOST'"
GOSSIP_JOIN=''
if [ -n "$JOIN" ]; then
  [[ "$JOIN" =~ ^[][A-Za-z0-9.:_-]+:[0-9]+$ ]] || die "--join must be HOST:PORT, got '$JOIN'"
  if [ -n "$SECRET_FILE" ]; then
    # A gossip member: the agent learns the leader from gossip and needs no master address.
    GOSSIP_JOIN=$JOIN
  else
    # Any master will do: a follower answers the agent with the leader's address.
    MASTERS=${MASTERS:+$MASTERS,}http://$JOIN
  fi
fi
[ -n "$GOSSIP_JOIN" ] || MASTERS=${MASTERS:-http://127.0.0.1:5050}
IFS=',' read -r -a master_list <<<"$MASTERS"
for m in ${MASTERS:+"${master_list[@]}"}; do
  [[ "$m" =~ ^https?://[^[:space:]/]+(/.*)?$ ]] || die "--master: '$m' is not a URL like http://host:5050"
done
if [ -n "$MASTER_ID$PEERS" ]; then
  [ -n "$MASTER_ID" ] && [ -n "$PEERS" ] || die "--master-id and --peers go together"
  [[ "$MASTER_ID" =~ ^[0-9]+$ ]] || die "--master-id must be a number"
  [[ ",$PEERS" == *",$MASTER_ID="* ]] || die "--peers does not name this master's id $MASTER_ID"
  [ -n "$SECRET_FILE" ] || [ -n "$ROOT" ] || [ -f /etc/cairn/secret ] || die "--secret-file is required for a group of masters"
  # Masters that each made their own credentials would know different secrets.
  [ -n "$MASTER_CREDENTIALS" ] || [ -n "$ROOT" ] || [ -f /etc/cairn/credentials.json ] || die "--credentials is required for a group of masters (the same file on each)"
fi
if [ -n "$SECRET_FILE" ]; then
  [ -r "$SECRET_FILE" ] || die "cannot read --secret-file $SECRET_FILE"
  [ "$(wc -c <"$SECRET_FILE")" -ge 16 ] || die "the secret in $SECRET_FILE must be at least 16 bytes"
fi
if [ "$ENABLE" = default ]; then
  if [ -n "$ROOT" ]; then ENABLE=''; else ENABLE=agent; fi
fi
for u in ${ENABLE//,/ }; do
  case "$u" in agent|master) ;; *) die "--enable takes agent, master or agent,master; got '$u'" ;; esac
done

# The masters refuse an agent without a credential: an agent unit without one would only
# restart forever. A master-only host may go without (its agent unit is written, not enabled).
AGENT_CREDENTIAL_DEST=/etc/cairn/agent-credential.json
CREDENTIALS_DEST=/etc/cairn/credentials.json
ACLS_DEST=/etc/cairn/acls.json
# Checks the shape of a JSON file the daemons will read, where a Node.js is at hand already
# (the daemons check it again at start, where it is not).
check_json() {
  local file=$1 kind=$2 flag=$3 node why
  [ -r "$file" ] || die "cannot read $flag $file"
  node=$(command -v node || true)
  [ -n "$node" ] || return 0
  why=$("$node" -e '
    const [file, kind] = process.argv.slice(1);
    let d;
    try { d = JSON.parse(require("fs").readFileSync(file, "utf8")); } catch (e) { console.log(`${file} is not JSON: ${e.message.replace(/\s+/g, " ")}`); process.exit(1); }
    const ok = (c) => c && typeof c.principal === "string" && c.principal !== "" && typeof c.secret === "string" && c.secret.length >= 16;
    const list = d && Array.isArray(d.credentials) ? d.credentials : undefined;
    let why = "";
    if (kind === "agent") {
      const agents = list ? list.filter((c) => c && c.agent === true) : [d];
      if (agents.length !== 1) why = `a credentials file given as an agent credential must hold exactly one "agent": true entry (it holds ${agents.length})`;
      else if (!ok(agents[0])) why = `an agent credential is {"principal": "...", "secret": "at least 16 characters"}`;
    } else if (kind === "credentials") {
      if (!list || list.length === 0 || !list.every(ok)) why = `credentials are {"credentials": [{"principal": "...", "secret": "at least 16 characters"}, ...]}`;
    } else if (d === null || typeof d !== "object" || Array.isArray(d)) why = "ACLs are a JSON object";
    if (why) { console.log(`${file}: ${why}`); process.exit(1); }
  ' "$file" "$kind" 2>&1) || die "$flag $why"
}
[ -z "$AGENT_CREDENTIAL" ] || check_json "$AGENT_CREDENTIAL" agent --credential
[ -z "$MASTER_CREDENTIALS" ] || check_json "$MASTER_CREDENTIALS" credentials --credentials
[ -z "$MASTER_ACLS" ] || check_json "$MASTER_ACLS" acls --acls
if [ -z "$AGENT_CREDENTIAL" ] && [ ! -f "$ROOT$AGENT_CREDENTIAL_DEST" ] && [ "$ENABLE" != master ]; then
  die "the agent needs a credential to register with the masters, and none is installed: give --credential FILE, {\"principal\": \"...\", \"secret\": \"...\"} whose principal the masters' credentials mark \"agent\": true (a master started without --credentials made DATA_DIR/credentials.json; its \"agent\" entry will do). Installing a master only? Add --enable master"
fi
if [ -n "$ROOT" ]; then
  mkdir -p "$ROOT"
  ROOT=$(cd "$ROOT" && pwd)
fi

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ -f "$SRC/package.json" ] && [ -f "$SRC/bin/cairn.js" ] || die "run this script from a Cairn checkout (deploy/install.sh)"

say() { echo "install.sh: $*"; }

# Writes stdin to a file only when its content differs, so a second run changes nothing.
write_if_changed() {
  local dest=$1 mode=$2 tmp
  tmp=$(mktemp "$(dirname "$dest")/.install.XXXXXX")
  cat >"$tmp"
  chmod "$mode" "$tmp"
  if [ -f "$dest" ] && cmp -s "$tmp" "$dest"; then
    rm -f "$tmp"
    return 1
  fi
  mv -f "$tmp" "$dest"
  say "wrote ${dest#"$ROOT"}"
  return 0
}

# One word of a systemd command line: quoted, with systemd's specifiers (%) and variables ($) escaped.
sd_quote() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//%/%%}
  s=${s//\$/\$\$}
  printf '"%s"' "$s"
}

# ------------------------------------------------------------------ Node.js

node_major() {
  "$1" -e 'process.stdout.write(process.versions.node.split(".")[0])' 2>/dev/null || echo 0
}

NODE_BIN=$(command -v node || true)
if [ -z "$NODE_BIN" ] || [ "$(node_major "$NODE_BIN")" -lt 20 ]; then
  if [ -n "$ROOT" ]; then
    die "Node.js 20 or later is needed on this host (packages are never installed under --root)"
  fi
  command -v apt-get >/dev/null || die "Node.js 20 or later is missing and this host has no apt-get; install it first"
  say "installing Node.js from the distribution's packages"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm
  NODE_BIN=$(command -v node || true)
  [ -n "$NODE_BIN" ] && [ "$(node_major "$NODE_BIN")" -ge 20 ] ||
    die "this distribution's nodejs is older than 20 (Debian 12 ships 18); install Node.js 20+ (Debian 13, or NodeSource's packages) and run again"
fi

# ------------------------------------------------------------------ the project

DEST=$ROOT/opt/cairn
ENTRIES="package.json package-lock.json tsconfig.json tsconfig.build.json README.md bin dist scripts agent master shared proto deploy docs"
# What the copy would hold: every file's path, size and time, and the locked dependencies.
# Equal to the installed copy's stamp means there is nothing to do.
stamp=$(cd "$SRC" && {
  for e in $ENTRIES; do [ -e "$e" ] && find "$e" -type f -printf '%p %s %T@\n'; done
  # npm rewrites this file on every install; tools' caches elsewhere in node_modules do not count.
  [ -f node_modules/.package-lock.json ] && find node_modules/.package-lock.json -printf '%p %s %T@\n'
} | sort | sha256sum | cut -d' ' -f1)
if [ "$(readlink -f "$SRC")" = "$(readlink -f "$DEST" 2>/dev/null || echo none)" ]; then
  say "running from the installed copy; the project is left as it is"
elif [ -f "$DEST/.install-stamp" ] && [ "$(cat "$DEST/.install-stamp")" = "$stamp" ]; then
  say "the project in ${DEST#"$ROOT"} is up to date"
else
  mkdir -p "$ROOT/opt"
  rm -rf "$DEST.new"
  mkdir "$DEST.new"
  for entry in $ENTRIES; do
    [ -e "$SRC/$entry" ] && cp -a "$SRC/$entry" "$DEST.new/"
  done
  if [ -d "$SRC/node_modules" ]; then
    # The checkout's own modules (native ones built for this Node); the development-only
    # ones are pruned, which needs no network.
    cp -a "$SRC/node_modules" "$DEST.new/"
    (cd "$DEST.new" && npm prune --omit=dev --no-audit --no-fund --offline >/dev/null 2>&1) || say "npm prune failed; development modules stay installed"
  else
    command -v npm >/dev/null || die "npm is needed to install the project's modules"
    (cd "$DEST.new" && npm ci --omit=dev --no-audit --no-fund)
  fi
  echo "$stamp" >"$DEST.new/.install-stamp"
  # Swap in the new copy whole: a failed install leaves the old one in place.
  rm -rf "$DEST.old"
  [ -e "$DEST" ] && mv "$DEST" "$DEST.old"
  mv "$DEST.new" "$DEST"
  rm -rf "$DEST.old"
  say "installed the project in ${DEST#"$ROOT"}"
fi

mkdir -p "$ROOT/usr/local/bin" "$ROOT/etc/cairn" "$ROOT/etc/systemd/system" "$ROOT$WORK_DIR" "$ROOT$DATA_DIR"
chmod 0755 "$ROOT/etc/cairn"
# The master's data dir (the registry: every tenant's task environments; the Raft log; the
# credentials) is its own: no task or local user enters it. Tasks pass through the agent's
# work dir to their sandboxes (search only), and list nothing there.
chmod 0700 "$ROOT$DATA_DIR"
chmod 0711 "$ROOT$WORK_DIR"
printf '#!/bin/sh\nexec %s /opt/cairn/bin/cairn.js "$@"\n' "$NODE_BIN" | write_if_changed "$ROOT/usr/local/bin/cairn" 0755 || true

SECRET_DEST=/etc/cairn/secret
if [ -n "$SECRET_FILE" ]; then
  write_if_changed "$ROOT$SECRET_DEST" 0600 <"$SECRET_FILE" || true
fi
# Credentials and ACLs: copied in when given, kept when installed before. The daemons refuse
# a credentials file others may read, so each stays 0600 whatever it was.
[ -z "$AGENT_CREDENTIAL" ] || write_if_changed "$ROOT$AGENT_CREDENTIAL_DEST" 0600 <"$AGENT_CREDENTIAL" || true
[ -z "$MASTER_CREDENTIALS" ] || write_if_changed "$ROOT$CREDENTIALS_DEST" 0600 <"$MASTER_CREDENTIALS" || true
[ -z "$MASTER_ACLS" ] || write_if_changed "$ROOT$ACLS_DEST" 0600 <"$MASTER_ACLS" || true
for f in "$AGENT_CREDENTIAL_DEST" "$CREDENTIALS_DEST" "$ACLS_DEST"; do
  [ ! -f "$ROOT$f" ] || chmod 0600 "$ROOT$f"
done

# ------------------------------------------------------------------ units

agent_cmd="$NODE_BIN /opt/cairn/bin/cairn.js agent --work-dir $(sd_quote "$WORK_DIR") --port $AGENT_PORT --credential $AGENT_CREDENTIAL_DEST"
[ -n "$MASTERS" ] && agent_cmd+=" --master $(sd_quote "$MASTERS")"
[ -n "$SECRET_FILE" ] && agent_cmd+=" --secret-file $SECRET_DEST"
[ -n "$GOSSIP_JOIN" ] && agent_cmd+=" --join $(sd_quote "$GOSSIP_JOIN")"
[ -n "$RESOURCES" ] && agent_cmd+=" --resources $(sd_quote "$RESOURCES")"
[ -n "$ATTRIBUTES" ] && agent_cmd+=" --attributes $(sd_quote "$ATTRIBUTES")"
[ -n "$DOCKER_RUNTIME" ] && agent_cmd+=" --docker-runtime $DOCKER_RUNTIME"
[ -n "$SPLIT_DNS" ] && agent_cmd+=" --task-dns-address $SPLIT_DNS"

master_cmd="$NODE_BIN /opt/cairn/bin/cairn.js master --host $MASTER_HOST --port $MASTER_PORT --data-dir $(sd_quote "$DATA_DIR")"
# Without a credentials file the master makes DATA_DIR/credentials.json on its first start.
[ -f "$ROOT$CREDENTIALS_DEST" ] && master_cmd+=" --credentials $CREDENTIALS_DEST"
[ -f "$ROOT$ACLS_DEST" ] && master_cmd+=" --acls $ACLS_DEST"
[ -n "$PEERS" ] && master_cmd+=" --id $MASTER_ID --peers $(sd_quote "$PEERS")"
# The secret authenticates the masters' Raft traffic and turns on gossip.
[ -n "$PEERS" ] || [ -n "$SECRET_FILE" ] && master_cmd+=" --secret-file $SECRET_DEST"

# Split DNS (opt-in): the host's resolver sends the cluster zone, and only it, to the agent's
# task resolver; every other name goes where it went before.
if [ -n "$SPLIT_DNS" ]; then
  mkdir -p "$ROOT/etc/systemd/resolved.conf.d"
  write_if_changed "$ROOT/etc/systemd/resolved.conf.d/cairn.conf" 0644 <<EOF || true
# Written by deploy/install.sh --split-dns: names under $DNS_DOMAIN go to the Cairn agent's task resolver.
[Resolve]
DNS=$SPLIT_DNS
Domains=~$DNS_DOMAIN
EOF
  [ -n "$ROOT" ] || systemctl try-reload-or-restart systemd-resolved 2>/dev/null || say "restart systemd-resolved to use /etc/systemd/resolved.conf.d/cairn.conf"
fi

changed_units=()
write_if_changed "$ROOT/etc/systemd/system/cairn-agent.service" 0644 <<EOF && changed_units+=(agent) || true
# Written by deploy/install.sh; run it again rather than editing this file.
[Unit]
Description=Cairn agent: runs tasks on this host for the Cairn masters
Documentation=file:///opt/cairn/README.md
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
Environment=CAIRN_LOG_LEVEL=info
ExecStart=$agent_cmd
Restart=always
RestartSec=2
# Only the agent process is stopped on restart or upgrade: tasks keep running and the
# next agent re-attaches to them (--recover=reconnect).
KillMode=process
# SIGTERM stops the agent without killing tasks; give it time to flush its state.
TimeoutStopSec=30
LimitNOFILE=1048576
TasksMax=infinity

[Install]
WantedBy=multi-user.target
EOF

write_if_changed "$ROOT/etc/systemd/system/cairn-master.service" 0644 <<EOF && changed_units+=(master) || true
# Written by deploy/install.sh; run it again rather than editing this file.
[Unit]
Description=Cairn master: replicated registry, offers, scheduler API, DNS
Documentation=file:///opt/cairn/README.md
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
Environment=CAIRN_LOG_LEVEL=info
ExecStart=$master_cmd
Restart=always
RestartSec=2
TimeoutStopSec=15
LimitNOFILE=1048576
# What the master writes (registry, Raft log, credentials) is 0600: it runs no tasks to inherit it.
UMask=0077

[Install]
WantedBy=multi-user.target
EOF

# ------------------------------------------------------------------ start

if [ -n "$ROOT" ]; then
  say "staged under $ROOT; nothing enabled or started"
  exit 0
fi
if [ ! -d /run/systemd/system ] || ! command -v systemctl >/dev/null; then
  say "systemd is not running here; start the agent with: $agent_cmd"
  exit 0
fi
systemctl daemon-reload
for u in ${ENABLE//,/ }; do
  systemctl enable "cairn-$u.service" >/dev/null
  if [[ " ${changed_units[*]:-} " == *" $u "* ]] || ! systemctl is-active --quiet "cairn-$u.service"; then
    systemctl restart "cairn-$u.service"
    say "started cairn-$u.service"
  fi
done
say "done"
