#!/bin/sh
# Builds sw2v:local with no registry: a stand-in for registry.aliyuncs.com/xlvector/sw2v
# made with `docker import` from this host's busybox (Debian's busybox-static). Its default
# command plays a ps-lite role as the seed's files wire it, without the word2vec program
# (ps-lite's C++, which cannot be built offline): it prints its role and the sizes it was
# told, finds the scheduler by DMLC_PS_ROOT_URI through the container's resolver (the agent's
# task resolver), says whether the data file SW2V_DATA names is there, and then runs until
# it is stopped, as the servers and workers of a real deployment do.
#
#   ./build-local-image.sh [TAG]        # default sw2v:local
set -eu
tag=${1:-sw2v:local}
busybox=$(command -v busybox || true)
for p in /bin/busybox /usr/bin/busybox; do [ -x "$p" ] && busybox=$p; done
if [ -z "$busybox" ]; then
  echo "build-local-image.sh: needs busybox (apt-get install busybox-static)" >&2
  exit 1
fi
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/tmp" "$root/etc"
cp "$busybox" "$root/bin/busybox"
for a in sh echo cat nslookup awk sleep wc test '[' env grep sort; do ln -s busybox "$root/bin/$a"; done
cat > "$root/bin/sw2v" <<'SCRIPT'
#!/bin/sh
echo "sw2v stand-in: role ${DMLC_ROLE:-?} of ${DMLC_NUM_SERVER:-?} server(s) and ${DMLC_NUM_WORKER:-?} worker(s), port ${PORT0:-?}"
if [ "$DMLC_ROLE" != scheduler ]; then
  i=0
  while [ $i -lt 120 ]; do
    addr=$(nslookup "$DMLC_PS_ROOT_URI" 2>/dev/null | awk '/^Name:/ { n = 1 } n && /^Address/ { a = $NF } END { print a }')
    [ -n "$addr" ] && break
    i=$((i + 1)); sleep 0.5
  done
  echo "scheduler $DMLC_PS_ROOT_URI:$DMLC_PS_ROOT_PORT is at ${addr:-(not found)}"
fi
if [ -n "${SW2V_DATA:-}" ]; then
  if [ -r "$SW2V_DATA" ]; then echo "data $SW2V_DATA: $(wc -c < "$SW2V_DATA") bytes"; else echo "data $SW2V_DATA: not there"; fi
fi
trap 'exit 0' TERM INT
sleep 2147483 &
wait $!
SCRIPT
chmod +x "$root/bin/sw2v"
tar -C "$root" -c . | docker import -c 'ENV PATH=/bin' -c 'CMD ["/bin/sw2v"]' - "$tag" >/dev/null
echo "$tag"
