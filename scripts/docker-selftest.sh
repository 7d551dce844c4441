#!/usr/bin/env bash
# The deployment, run for real: builds docker/Dockerfile with a local Docker engine and runs
# what the README documents.
#
#   scripts/docker-selftest.sh [PART...]     (as root on Debian 12; default: every part)
#
#   image    the base image debian:12-slim (made with mmdebstrap from the apt mirror, once:
#            it stays in Docker's store) and the project's image; prints sizes and times
#   run      `docker run --read-only --tmpfs /tmp` as the README says: non-root, /health,
#            /translate, /translate_file (its spool lives in that tmpfs), /metrics
#   stop     `docker stop` while clients on the host's loopback keep sending: every request
#            is either answered correctly or refused before the server read it (connection
#            refused or closed with no answer byte, or a 503), the server drains and exits 0
#   systemd  deploy/systemd/mt-server.service under a real systemd 252 (PID 1 of a privileged
#            container made from the image): starts, translates, `systemctl stop` is clean
#   compose  docker/compose.scale.yml with docker-compose v1 (nginx and PostgreSQL images
#            built here from Debian packages: no registry): after `--scale mt=3` the new
#            replica gets requests without an nginx reload; scaling down loses none
#
# Installs docker.io, mmdebstrap and docker-compose with apt when missing, starts dockerd
# when none answers (and stops it at the end). Exit 0: every part asked for ran and passed;
# 1: a check failed; 77: Docker cannot run here, or a part asked for could not run (the
# reasons are printed; the parts that did run were checked all the same).
# Environment: MT_DEBIAN_MIRROR (default: the first bookworm mirror of the apt sources),
# MT_SELFTEST_KEEP=1 keeps the images built.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$(pwd)

parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(image run stop systemd compose)
want() {
  local p
  for p in "${parts[@]}"; do [ "$p" = "$1" ] && return 0; done
  return 1
}
for p in "${parts[@]}"; do
  case $p in image | run | stop | systemd | compose) ;; *)
    echo "usage: $0 [image|run|stop|systemd|compose]..." >&2
    exit 2
    ;;
  esac
done

t_start=$SECONDS
say() { printf 'docker-selftest [%4ds]: %s\n' $((SECONDS - t_start)) "$*"; }
skip() {
  say "SKIP: $*"
  exit 77
}
failures=0
skipped=() # parts that cannot run here, with the reason
fail() {
  say "FAIL: $*"
  failures=$((failures + 1))
}
ok() { say "ok: $*"; }

version=$(sed -n "s/^ *version *: *'\([^']*\)'.*/\1/p" meson.build | head -1)
image="mt-server:${version:-dev}"
tag_test="mt-server:selftest-$$"
work=$(mktemp -d /tmp/mt-docker-selftest.XXXXXX)
containers=()
dockerd_pid=
compose_project=
# shellcheck disable=SC2317  # (run by the EXIT trap)
cleanup() {
  local c
  for c in "${containers[@]}"; do docker rm -f "$c" >/dev/null 2>&1; done
  if [ -n "$compose_project" ]; then
    docker-compose -p "$compose_project" -f docker/compose.scale.yml down -t 30 >/dev/null 2>&1
  fi
  if [ "${MT_SELFTEST_KEEP:-0}" != 1 ]; then
    docker rmi "$tag_test" "$tag_test-systemd" >/dev/null 2>&1
  fi
  if [ -n "$dockerd_pid" ]; then
    say "stopping the dockerd this script started (pid $dockerd_pid)"
    kill "$dockerd_pid" 2>/dev/null
    for _ in $(seq 1 60); do kill -0 "$dockerd_pid" 2>/dev/null || break; sleep 0.5; done
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# ------------------------------------------------------------------ tools and the engine

if [ "$(id -u)" -ne 0 ] && ! docker info >/dev/null 2>&1; then
  skip "not root and no Docker daemon answers this user"
fi
need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v docker >/dev/null || need+=(docker.io)
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
if want compose && ! command -v docker-compose >/dev/null; then need+=(docker-compose); fi
if [ ${#need[@]} -gt 0 ]; then
  [ "$(id -u)" -eq 0 ] || skip "missing ${need[*]} and not root to install them"
  command -v apt-get >/dev/null || skip "missing ${need[*]} and no apt-get (not Debian)"
  say "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get update -q && apt-get install -y -q --no-install-recommends "${need[@]}"; } >"$work/apt.log" 2>&1; then
    tail -5 "$work/apt.log"
    skip "cannot install ${need[*]} with apt"
  fi
fi
# A newer static client may come first in PATH; it talks to Debian's engine as well.
say "docker client $(docker version -f '{{.Client.Version}}' 2>/dev/null)"

if ! docker info >/dev/null 2>&1; then
  [ "$(id -u)" -eq 0 ] || skip "no Docker daemon answers and not root to start one"
  say "starting dockerd (log: /tmp/mt-selftest-dockerd.log)"
  dockerd >/tmp/mt-selftest-dockerd.log 2>&1 &
  dockerd_pid=$!
  deadline=$((SECONDS + 90))
  until docker info >/dev/null 2>&1; do
    if ! kill -0 "$dockerd_pid" 2>/dev/null || [ $SECONDS -ge $deadline ]; then
      tail -5 /tmp/mt-selftest-dockerd.log
      kill "$dockerd_pid" 2>/dev/null
      dockerd_pid=
      skip "dockerd does not start here (no privileges for its namespaces, cgroups or iptables?)"
    fi
    sleep 0.5
  done
fi
say "Docker engine $(docker version -f '{{.Server.Version}}' 2>/dev/null) ($(docker info -f '{{.Driver}}, cgroup v{{.CgroupVersion}}' 2>/dev/null))"

# ------------------------------------------------------------------------------ image

debian_mirror() {
  if [ -n "${MT_DEBIAN_MIRROR:-}" ]; then
    echo "$MT_DEBIAN_MIRROR"
    return
  fi
  # deb822 stanzas (URIs:/Suites:) and one-line entries; the first one serving bookworm
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    awk '
      /^deb / { l = $0; gsub(/\[[^]]*\] */, "", l); split(l, w, " "); if (w[3] == "bookworm") { print w[2]; exit } }
      /^URIs:/ { uri = $2 }
      /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "bookworm") found = 1 }
      /^$/ { if (found && uri) { print uri; exit } ; uri = ""; found = 0 }
      END { if (found && uri) print uri }
    ' "$f"
  done | head -1 | grep . || echo http://deb.debian.org/debian
}

if ! docker image inspect debian:12-slim >/dev/null 2>&1; then
  mirror=$(debian_mirror)
  say "building the base image debian:12-slim with mmdebstrap from $mirror"
  t0=$SECONDS
  if ! mmdebstrap --variant=minbase bookworm - "$mirror" 2>"$work/mmdebstrap.log" | docker import - debian:12-slim >/dev/null; then
    tail -5 "$work/mmdebstrap.log"
    fail "mmdebstrap | docker import"
    exit 1
  fi
  say "base image built in $((SECONDS - t0)) s, $(docker image inspect -f '{{.Size}}' debian:12-slim | awk '{printf "%.0f MB", $1 / 1e6}')"
else
  say "base image debian:12-slim is there (built once, kept in Docker's store)"
fi

if want image || ! docker image inspect "$image" >/dev/null 2>&1; then
  say "docker build -f docker/Dockerfile -t $image ."
  t0=$SECONDS
  previous=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null)
  if ! docker build -f docker/Dockerfile -t "$image" -t "$tag_test" . >"$work/build.log" 2>&1; then
    tail -30 "$work/build.log"
    fail "docker build"
    exit 1
  fi
  # the image this one replaces, and its build stage, would pile up run after run
  if [ -n "$previous" ] && [ "$previous" != "$(docker image inspect -f '{{.Id}}' "$image")" ]; then
    docker rmi "$previous" >/dev/null 2>&1
  fi
  size=$(docker image inspect -f '{{.Size}}' "$image")
  apt_left=$(docker run --rm --user 0 --entrypoint sh "$image" -c 'du -sk /var/cache/apt /var/lib/apt/lists | awk "{s += \$1} END {print s}"')
  ok "image $image built in $((SECONDS - t0)) s: $((size / 1000000)) MB, apt cache and lists ${apt_left} KB"
  [ "${apt_left:-0}" -lt 1024 ] || fail "the image keeps ${apt_left} KB of apt cache and lists"
else
  docker tag "$image" "$tag_test"
fi

# ------------------------------------------------------------------ HTTP from the host

# py SCRIPT ARGS...: the HTTP checks and the load (Python's standard library only).
py() { python3 "$root/scripts/docker-selftest.py" "$@"; }

wait_ready() { # NAME URL: until /health/ready answers 200, or the container stops
  local deadline=$((SECONDS + 300))
  until py get "$2/health/ready" >/dev/null 2>&1; do
    if [ "$(docker inspect -f '{{.State.Running}}' "$1" 2>/dev/null)" != true ] || [ $SECONDS -ge $deadline ]; then
      docker logs --tail 20 "$1" 2>&1
      return 1
    fi
    sleep 0.5
  done
}

host_port() { docker port "$1" 8080/tcp | head -1 | sed 's/.*://'; }

# The README's read-only run: the root filesystem read-only, /tmp (the file spool) a tmpfs.
readonly_run() { # NAME [docker run options...]
  local name=$1
  shift
  docker run -d --name "$name" --read-only --tmpfs /tmp:rw,nosuid,nodev,size=512m --stop-timeout 30 \
    -p 127.0.0.1::8080 "$@" "$tag_test" >/dev/null
}

if want run; then
  name=mt-selftest-run-$$
  containers+=("$name")
  t0=$SECONDS
  if ! readonly_run "$name"; then
    fail "docker run --read-only"
  else
    url="http://127.0.0.1:$(host_port "$name")"
    if wait_ready "$name" "$url"; then
      ok "read-only container ready in $((SECONDS - t0)) s at $url"
      ident=$(docker exec "$name" id)
      case $ident in *"uid=10001(mt) gid=10001(mt)"*) ok "runs as $ident" ;; *) fail "runs as $ident" ;; esac
      if docker exec "$name" sh -c 'touch /probe' 2>/dev/null; then fail "root filesystem is writable"; else ok "root filesystem is read-only"; fi
      if out=$(py check "$url" 2>&1); then
        printf '%s\n' "$out" | sed 's/^/    /'
        ok "health, translate, translate_file (spool in the tmpfs), metrics"
      else
        printf '%s\n' "$out" | sed 's/^/    /'
        fail "HTTP checks against the read-only container"
      fi
      health=$(docker inspect -f '{{.State.Health.Status}}' "$name")
      say "Docker's HEALTHCHECK status: $health"
    else
      fail "the read-only container never became ready"
    fi
  fi
  docker rm -f "$name" >/dev/null 2>&1
fi

if want stop; then
  name=mt-selftest-stop-$$
  containers+=("$name")
  # no sentence cache: the same sentences are translated again, so requests are in flight
  if readonly_run "$name" -e MT_SENTENCE_CACHE_MB=0 && url="http://127.0.0.1:$(host_port "$name")" && wait_ready "$name" "$url"; then
    # 32 clients, each at most 150 requests of 1 to 12 sentences; `docker stop` after 40 answers
    if out=$(py stop-under-load "$url" "$name" 2>&1); then
      printf '%s\n' "$out" | sed 's/^/    /'
      ok "docker stop under load: nothing lost"
    else
      printf '%s\n' "$out" | sed 's/^/    /'
      fail "docker stop under load"
    fi
    code=$(docker inspect -f '{{.State.ExitCode}}' "$name")
    logs=$(docker logs "$name" 2>&1)
    printf '%s\n' "$logs" | grep -E 'event=(draining|drain_incomplete|stopped)' | sed 's/^/    /'
    [ "$code" = 0 ] || fail "the server exited $code"
    grep -q 'event=stopped exit_code=0' <<<"$logs" || fail "no 'event=stopped exit_code=0' in the log"
    if grep -q 'event=drain_incomplete' <<<"$logs"; then fail "the drain did not finish"; fi
  else
    fail "the container for the stop test never became ready"
  fi
  docker rm -f "$name" >/dev/null 2>&1
fi

# ------------------------------------------------------------------------------ systemd

# The unit needs systemd as PID 1: a container of the project's image with systemd added,
# the unit installed as the README says (binaries in /usr/local/bin, models and web/ under
# /usr/local/share/mt). Not --privileged: where the host withholds a capability (here:
# CAP_SYS_RESOURCE) runc refuses it; all the others, no seccomp/AppArmor profile, and the
# host's cgroup hierarchy writable are what systemd needs.
if want systemd; then
  name=mt-selftest-systemd-$$
  containers+=("$name")
  mkdir -p "$work/systemd"
  cp deploy/systemd/mt-server.service "$work/systemd/"
  cat >"$work/systemd/Dockerfile" <<DOCKERFILE
FROM $tag_test
USER root
RUN apt-get update -q && apt-get install -y -q --no-install-recommends systemd systemd-sysv \\
 && apt-get clean && rm -rf /var/lib/apt/lists/* \\
 && mkdir -p /usr/local/share/mt \\
 && ln -s /models /usr/local/share/mt/models && ln -s /usr/share/mt/web /usr/local/share/mt/web
COPY mt-server.service /etc/systemd/system/mt-server.service
RUN systemctl enable mt-server.service
ENV container=docker
STOPSIGNAL SIGRTMIN+3
HEALTHCHECK NONE
CMD ["/lib/systemd/systemd"]
DOCKERFILE
  t0=$SECONDS
  caps=(--cap-add ALL)
  if ! grep -q '^CapBnd:.*' /proc/self/status || [ $((0x$(awk '/^CapBnd/ {print $2}' /proc/self/status) >> 24 & 1)) -eq 0 ]; then
    caps+=(--cap-drop SYS_RESOURCE)
  fi
  cgroup=(-v /sys/fs/cgroup:/sys/fs/cgroup:rw)
  [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] && cgroup=(--cgroupns private -v /sys/fs/cgroup:/sys/fs/cgroup:rw)
  [ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ] && cgroup+=(--cgroupns host)
  if ! docker build -q -t "$tag_test-systemd" "$work/systemd" >"$work/systemd.log" 2>&1; then
    tail -20 "$work/systemd.log"
    fail "building the systemd image"
  elif ! docker run -d --name "$name" "${caps[@]}" --security-opt seccomp=unconfined \
    --security-opt apparmor=unconfined "${cgroup[@]}" --tmpfs /run --tmpfs /run/lock \
    "$tag_test-systemd" >"$work/systemd-run.log" 2>&1; then
    skipped+=("systemd: docker cannot start a container for systemd here: $(tail -1 "$work/systemd-run.log")")
  else
    state=
    deadline=$((SECONDS + 120))
    while [ $SECONDS -lt $deadline ]; do
      state=$(docker exec "$name" systemctl is-system-running 2>/dev/null)
      case $state in running | degraded) break ;; esac
      [ "$(docker inspect -f '{{.State.Running}}' "$name")" = true ] || break
      sleep 0.5
    done
    case $state in
      running | degraded)
        say "systemd $(docker exec "$name" systemctl --version | head -1 | awk '{print $2}') is PID 1 ($state) after $((SECONDS - t0)) s"
        sd_show() { docker exec "$name" systemctl show mt-server -p "$1" --value; }
        # ready: /health answers 200 (the image's healthcheck script), and never restarted
        deadline=$((SECONDS + 120))
        until docker exec "$name" mt-healthcheck 2>/dev/null; do
          if [ "$(sd_show NRestarts)" != 0 ] || [ $SECONDS -ge $deadline ]; then break; fi
          sleep 0.5
        done
        restarts=$(sd_show NRestarts)
        pid=$(sd_show MainPID)
        if [ "$restarts" != 0 ] || [ "$(sd_show ActiveState)" != active ]; then
          docker exec "$name" journalctl -u mt-server --no-pager | tail -8 | sed 's/^/    /'
          fail "mt-server.service did not stay up (restarts: $restarts, last exit: $(sd_show ExecMainCode)/$(sd_show ExecMainStatus))"
        else
          ok "mt-server.service active, pid $pid, $(docker exec "$name" awk '/^(Uid|Seccomp):/ {printf "%s %s ", $1, $2}' /proc/"$pid"/status)"
          answer=$(docker exec "$name" bash -c '
            body="{\"q\": \"The weather is nice today.\", \"source\": \"en\", \"target\": \"de\"}"
            exec 3<>/dev/tcp/127.0.0.1/8080 || exit 1
            printf "POST /translate HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" "${#body}" "$body" >&3
            cat <&3')
          status=$(head -1 <<<"$answer" | tr -d '\r')
          text=$(tail -1 <<<"$answer")
          case $status in
            *" 200 "*) case $text in *'"translatedText":"'?*) ok "translated under systemd: $text" ;; *) fail "no translation: $text" ;; esac ;;
            *) fail "POST /translate under systemd: ${status:-no answer}" ;;
          esac
          t1=$SECONDS
          docker exec "$name" systemctl stop mt-server
          result="$(sd_show Result) $(sd_show ExecMainCode)/$(sd_show ExecMainStatus)"
          journal=$(docker exec "$name" journalctl -u mt-server --no-pager)
          grep -E 'event=(draining|stopped)|Deactivated|Stopped' <<<"$journal" | tail -4 | sed 's/^/    /'
          # what the sandbox denied shows up as warnings or errors: none expected
          if grep -E 'level=(warn|error)' <<<"$journal" | sed 's/^/    /' | grep .; then
            fail "mt-server logged warnings or errors under systemd (above)"
          fi
          # Result success, the main process exited (code 1 = CLD_EXITED) with status 0
          if [ "$result" = "success 1/0" ] && grep -q 'event=stopped exit_code=0' <<<"$journal"; then
            ok "systemctl stop: clean ($result) in $((SECONDS - t1)) s"
          else
            fail "systemctl stop: result $result"
          fi
        fi
        ;;
      *)
        reason=$(docker logs "$name" 2>&1 | grep -iE 'fail|error|cgroup' | tail -2 | tr '\n' ' ')
        skipped+=("systemd: systemd does not boot as PID 1 in a container here (state '${state:-none}'): ${reason:-no log}")
        ;;
    esac
  fi
  docker rm -f "$name" >/dev/null 2>&1
fi

# ------------------------------------------------------------------------------ compose

# docker/compose.scale.yml with Debian's docker-compose v1: nginx (Debian's nginx-light in an
# image made here: no registry) in front of 2 replicas; scaled to 3 under load, the new
# replica must get requests without an nginx reload; scaled to 1 under load, no request
# may fail. Requests per replica come from nginx's access log (upstream=ADDRESS).
if want compose; then
  if ! command -v docker-compose >/dev/null; then
    skipped+=("compose: docker-compose is not installed")
  else
    mkdir -p "$work/nginx"
    cat >"$work/nginx/Dockerfile" <<'DOCKERFILE'
FROM debian:12-slim
RUN apt-get update -q && apt-get install -y -q --no-install-recommends nginx-light \
 && apt-get clean && rm -rf /var/lib/apt/lists/* && rm -f /etc/nginx/sites-enabled/default
CMD ["nginx", "-g", "daemon off;"]
DOCKERFILE
    # PostgreSQL likewise: Debian's postgresql-15 with an entrypoint that does what the
    # official image's does for this compose file (initdb with POSTGRES_USER and
    # POSTGRES_PASSWORD on the first start, POSTGRES_DB created, TCP with passwords).
    mkdir -p "$work/postgres"
    cat >"$work/postgres/Dockerfile" <<'DOCKERFILE'
FROM debian:12-slim
RUN apt-get update -q && apt-get install -y -q --no-install-recommends postgresql-15 \
 && apt-get clean && rm -rf /var/lib/apt/lists/* \
 && install -d -o postgres -g postgres -m 700 /var/lib/postgresql/data
COPY entrypoint.sh /usr/local/bin/entrypoint.sh
USER postgres
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
ENTRYPOINT ["/bin/sh", "/usr/local/bin/entrypoint.sh"]
DOCKERFILE
    cat >"$work/postgres/entrypoint.sh" <<'ENTRYPOINT'
set -e
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pw=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pw"
  initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pw" -A scram-sha-256 >/dev/null
  rm -f "$pw"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  postgres -D "$PGDATA" -c listen_addresses= -k /tmp &
  until pg_isready -q -h /tmp; do sleep 0.2; done
  PGPASSWORD=$POSTGRES_PASSWORD createdb -h /tmp -U "$POSTGRES_USER" "$POSTGRES_DB"
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec postgres -D "$PGDATA" -k /tmp
ENTRYPOINT
    nginx_image=mt-nginx:selftest postgres_image=mt-postgres:selftest
    if ! docker build -q -t "$nginx_image" "$work/nginx" >"$work/nginx.log" 2>&1; then
      tail -10 "$work/nginx.log"
      fail "building the nginx image"
    elif ! docker build -q -t "$postgres_image" "$work/postgres" >"$work/postgres.log" 2>&1; then
      tail -10 "$work/postgres.log"
      fail "building the postgres image"
    else
      port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
      compose_project=mtselftest$$
      export MT_IMAGE=$tag_test NGINX_IMAGE=$nginx_image POSTGRES_IMAGE=$postgres_image MT_PUBLISH=127.0.0.1:$port MT_WORKERS=1 MT_REPLICAS=2
      dc() { docker-compose -p "$compose_project" -f docker/compose.scale.yml "$@"; }
      url=http://127.0.0.1:$port
      t0=$SECONDS
      if ! dc up -d --no-build >"$work/compose-up.log" 2>&1; then
        tail -10 "$work/compose-up.log"
        fail "docker-compose up"
      else
        deadline=$((SECONDS + 180))
        until py get "$url/health/ready" >/dev/null 2>&1 || [ $SECONDS -ge $deadline ]; do sleep 0.5; done
        replicas() { dc ps -q mt | xargs -r docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' | sort; }
        nginx_c=$(dc ps -q nginx)
        log_lines() { docker exec "$nginx_c" sh -c 'wc -l < /var/log/nginx/access.log'; }
        per_replica() { # FROM_LINE: "ADDRESS=N ..." for the translations logged after that line
          docker exec "$nginx_c" tail -n +"$(($1 + 1))" /var/log/nginx/access.log |
            grep -o 'POST /translate HTTP/1.1" 200 .*upstream=[0-9.]*' | sed 's/.*upstream=//' | sort | uniq -c |
            awk '{printf "%s=%d ", $2, $1}'
        }
        before=$(replicas | tr '\n' ' ')
        say "compose: $(echo "$before" | wc -w) replicas ($before) behind nginx at $url after $((SECONDS - t0)) s"

        # wait_log N: until nginx has logged N lines (the load is flowing), 60 s at most
        wait_log() {
          local deadline=$((SECONDS + 60))
          until [ "$(log_lines)" -ge "$1" ] || [ $SECONDS -ge $deadline ]; do sleep 0.2; done
        }

        # scale up while 4 clients keep sending, until the new replica has served 200
        # translations (or 180 s)
        from=$(log_lines)
        rm -f "$work/stop-load"
        py spread "$url" 240 "$work/stop-load" >"$work/spread-up.json" &
        spread_pid=$!
        wait_log $((from + 100))
        t1=$SECONDS
        dc up -d --no-build --no-recreate --scale mt=3 >>"$work/compose-up.log" 2>&1 || fail "docker-compose up --scale mt=3"
        new=$(comm -13 <(echo "$before" | tr ' ' '\n' | grep .) <(replicas))
        say "compose: scaled to 3 in $((SECONDS - t1)) s; new replica ${new:-none}"
        deadline=$((SECONDS + 180))
        until [ -z "$new" ] || [ $SECONDS -ge $deadline ] ||
          [ "$(per_replica "$from" | grep -o "$new=[0-9]*" | cut -d= -f2)" -ge 200 ] 2>/dev/null; do
          sleep 0.5
        done
        touch "$work/stop-load"
        wait $spread_pid
        up_rc=$?
        counts=$(per_replica "$from")
        say "scale-up window: $(cat "$work/spread-up.json")"
        say "scale-up window: translations per replica: $counts"
        [ $up_rc -eq 0 ] || fail "requests failed while scaling up"
        if [ -n "$new" ] && grep -q "$new=" <<<"$counts"; then
          ok "the new replica $new got requests without an nginx reload"
        else
          fail "the new replica ${new:-?} got no request (counts: $counts)"
        fi

        # scale down to 1 while 4 clients keep sending, and for 1,000 more requests after
        from=$(log_lines)
        rm -f "$work/stop-load"
        py spread "$url" 240 "$work/stop-load" >"$work/spread-down.json" &
        spread_pid=$!
        wait_log $((from + 100))
        t1=$SECONDS
        dc up -d --no-build --no-recreate --scale mt=1 >>"$work/compose-up.log" 2>&1 || fail "docker-compose up --scale mt=1"
        say "compose: scaled to 1 in $((SECONDS - t1)) s; left: $(replicas | tr '\n' ' ')"
        mark=$(log_lines)
        wait_log $((mark + 1000))
        touch "$work/stop-load"
        wait $spread_pid
        down_rc=$?
        say "scale-down window: $(cat "$work/spread-down.json")"
        say "scale-down window: translations per replica: $(per_replica "$from")"
        if [ $down_rc -eq 0 ]; then ok "scale-down: every request answered"; else fail "requests failed while scaling down"; fi
      fi
      dc down -t 30 >/dev/null 2>&1
      compose_project=
      docker rmi "$nginx_image" >/dev/null 2>&1
    fi
  fi
fi

for s in "${skipped[@]}"; do say "SKIP: $s"; done
say "done in $((SECONDS - t_start)) s: $failures failure(s), ${#skipped[@]} part(s) skipped"
[ "$failures" -eq 0 ] || exit 1
# 77 when a part asked for did not run, even if the others passed: a run that could not
# boot systemd has not tested the unit and must show as SKIP, not as a pass (the parts
# that ran are in the lines above)
[ ${#skipped[@]} -gt 0 ] && exit 77
exit 0
