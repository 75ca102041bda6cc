#!/usr/bin/env bash
# The error-page soak: the release probe sends N times, C in flight, to an
# nginx on 127.0.0.1 that answers every POST with a 500 and an HTML page
# (1 MB and 300 MB) or a short JSON error, and the peak RSS of each run is
# read from `/usr/bin/time -v`. nginx runs from a temporary directory on a
# port the kernel picked free, and is stopped however the script ends.
#
#   benches/soak.sh [N [C]]          # default 20000 sends, 256 in flight
#   TOKIO_WORKER_THREADS=8 benches/soak.sh   # as on an 8-core machine
#   KEEP_SOAK=1 benches/soak.sh 50 8         # keep the nginx directory to look at
#
# Needs nginx, python3 and GNU time (/usr/bin/time). The peak depends on the
# runtime's worker threads (one per core by default): glibc keeps an arena
# per thread, and what each arena keeps after a burst counts as RSS.
set -euo pipefail

sends=${1:-20000}
concurrency=${2:-256}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/meterwire-soak.XXXXXX)
# nginx's worker runs as another user, and reads the pages from here.
chmod 755 "$work"

stop() {
    if [[ -s $work/nginx.pid ]]; then
        kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
    fi
    [[ -n ${KEEP_SOAK:-} ]] || rm -rf "$work"
}
trap stop EXIT

# Three ports the kernel reports free, held only while they are read.
read -r big huge small < <(python3 - <<'EOF'
import socket
held = [socket.socket() for _ in range(3)]
for s in held:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in held))
EOF
)

mkdir -p "$work"/{www,logs,tmp}
python3 - "$work/www" <<'EOF'
import sys
row = b"<tr><td>quota</td><td>the account is over its limit; see the billing page</td></tr>\n"
def page(n):
    body = b"<!DOCTYPE html><html><head><title>Server error</title></head><body><table>\n"
    body += row * ((n - len(body)) // len(row) + 1)
    return body[: n - 22] + b"</table></body></html>"
www = sys.argv[1]
open(f"{www}/big.html", "wb").write(page(1_000_000))
chunk = page(1 << 20)
with open(f"{www}/huge.html", "wb") as f:
    for _ in range(300):
        f.write(chunk)
open(f"{www}/small.html", "wb").write(b'{"error":"server error, try later"}\n')
EOF

server() { # port page
    cat <<EOF
    server {
        listen 127.0.0.1:$1;
        root $work/www;
        error_page 500 /$2.html;
        location / { return 500; }
        location = /$2.html { internal; }
    }
EOF
}
cat > "$work/nginx.conf" <<EOF
worker_processes 1;
error_log $work/logs/error.log warn;
pid $work/nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    default_type text/html;
    client_body_temp_path $work/tmp;
    proxy_temp_path $work/tmp;
    fastcgi_temp_path $work/tmp;
    uwsgi_temp_path $work/tmp;
    scgi_temp_path $work/tmp;
$(server "$big" big)
$(server "$huge" huge)
$(server "$small" small)
}
EOF
nginx -c "$work/nginx.conf" -p "$work"

(cd "$root" && cargo build --release --example probe --quiet)
probe=$root/target/release/examples/probe

echo "load: $(cut -d' ' -f1-3 /proc/loadavg); $sends sends, $concurrency in flight, worker threads: ${TOKIO_WORKER_THREADS:-one per core}"
for run in "big:1 MB page" "huge:300 MB page" "small:short JSON"; do
    port=${run%%:*}
    port=${!port}
    env -i PATH="$PATH" ${TOKIO_WORKER_THREADS:+TOKIO_WORKER_THREADS=$TOKIO_WORKER_THREADS} \
        CHANT_BEHAVIOUR_ENGINE="http://127.0.0.1:$port/v1" \
        CHANT_BEHAVIOUR_TOKEN=mw-soak-Q7vX2kP9zR4tL8wN \
        /usr/bin/time -v "$probe" --repeat "$sends" --concurrency "$concurrency" --json \
        >"$work/run.json" 2>"$work/run.time"
    peak=$(awk -F': ' '/Maximum resident/ {print $2}' "$work/run.time")
    refused=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["refusals"]["engine-unreachable"])' "$work/run.json")
    printf '%-18s peak RSS %6d KiB (%.1f MiB), %s of %s sends refused engine-unreachable\n' \
        "${run#*:}" "$peak" "$(echo "$peak / 1024" | bc -l)" "$refused" "$sends"
    if [[ $refused != "$sends" ]]; then
        echo "not every send met the error page: $(head -c 300 "$work/run.json")" >&2
        exit 1
    fi
done
