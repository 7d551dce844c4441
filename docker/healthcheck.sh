#!/usr/bin/env bash
# Docker HEALTHCHECK: exit 0 when mt-server's GET /health answers 200 (ready), else 1.
# Plain bash (/dev/tcp), so the image needs no curl. Port: MT_HEALTH_PORT, MT_PORT or 8080.
set -uo pipefail
port=${MT_HEALTH_PORT:-${MT_PORT:-8080}}
exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 1
printf 'GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
status=''
IFS= read -r -t 4 status <&3 || true
while IFS= read -r -t 2 _ <&3; do :; done # the rest, so the server sees no reset
exec 3<&-
case $status in
  "HTTP/1."?" 200"*) exit 0 ;;
  *) printf 'mt-healthcheck: %s\n' "${status:-no answer from 127.0.0.1:$port}" >&2; exit 1 ;;
esac
