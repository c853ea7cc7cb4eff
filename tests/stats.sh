#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# stats.sh: the SICM_STATS report as the processes that write it and the
# files that take it see it.  Each check runs tests/stats_check, a fresh
# process (a process writes its report once).
#  - 8 processes of 1,000 named arenas exiting together append 8 whole
#    JSON lines to one file;
#  - the report's time grows with the arenas, not their square (a ratio
#    within one process: 4 times the arenas take less than 8 times as long);
#  - a FIFO (with or without a reader) or a device at the path is refused
#    in one line, never waited on; a write that fails is one line;
#  - a last sicm_fini refused with EBUSY stops nothing;
#  - another user's file, or symbolic link, at the path is refused (in a
#    sticky directory such as /tmp it could send the report anywhere).
set -u
b=${SICM_TOP_BUILDDIR:?}
check=$b/tests/stats_check
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
step() { # step NAME COMMAND...: one check, its output kept
  name=$1
  shift
  echo "--- $name"
  if "$@"; then echo "PASS: $name"; else echo "FAIL: $name"; failed=1; fi
}

together() {
  mkdir "$tmp/barrier"
  pids=""
  for i in 1 2 3 4 5 6 7 8; do
    SICM_STATS=$tmp/together.json "$check" arenas 1000 "$tmp/barrier" &
    pids="$pids $!"
  done
  # Every process has made its arenas: let them exit at once.
  tries=0
  while [ "$(ls "$tmp/barrier" | grep -c '^ready')" -lt 8 ] && [ $tries -lt 6000 ]; do
    sleep 0.05
    tries=$((tries + 1))
  done
  touch "$tmp/barrier/go"
  rc=0
  for pid in $pids; do wait "$pid" || rc=1; done
  [ $rc -eq 0 ] || return 1
  python3 - "$tmp/together.json" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
print(f"{len(lines)} lines")
assert len(lines) == 8, "expected one line per process"
pids = set()
for line in lines:
    report = json.loads(line)  # whole: no other process's text inside
    named = [a for a in report["arenas"] if a["name"].startswith("stats-")]
    assert len(named) == 1000, len(named)
    pids.add(report["pid"])
assert len(pids) == 8
PY
}

linear() {
  out=$("$check" scale 250 1000) || return 1
  echo "report of 250 arenas, then of 1000 (seconds): $out"
  echo "$out" | awk '{ if ($4 >= 8 * $2) { print "grew more than linearly"; exit 1 } }'
}

refused() { # refused PATH: the report at PATH is refused in one line
  err=$(SICM_STATS=$1 timeout 60 "$check" arenas 3 2>&1 >/dev/null)
  rc=$?
  echo "$err"
  [ $rc -eq 0 ] && [ "$(printf '%s\n' "$err" | grep -c .)" -eq 1 ] &&
    printf '%s\n' "$err" | grep -q "not a regular file"
}

fifo_with_reader() {
  mkfifo "$tmp/read-fifo"
  # A reader that holds the FIFO open, its output not the harness's.
  sleep 60 <>"$tmp/read-fifo" >/dev/null 2>&1 &
  reader=$!
  sleep 0.2
  refused "$tmp/read-fifo"
  rc=$?
  kill "$reader" 2>/dev/null
  wait "$reader" 2>/dev/null
  return $rc
}

write_fails() { # a file size limit of 0: the one write fails with EFBIG
  err=$( (ulimit -f 0; trap '' XFSZ; SICM_STATS=$tmp/limited.json "$check" arenas 3) 2>&1 >/dev/null)
  rc=$?
  echo "$err"
  [ $rc -eq 0 ] && [ "$(printf '%s\n' "$err" | grep -c .)" -eq 1 ] &&
    printf '%s\n' "$err" | grep -q "writing .* failed"
}

ebusy() {
  err=$(SICM_AUTOPLACE=interval=20ms,mode=monitor SICM_STATS=$tmp/ebusy.txt "$check" ebusy 2>&1)
  rc=$?
  echo "$err"
  if printf '%s\n' "$err" | grep -q "SICM_AUTOPLACE=.* ignored"; then
    echo "the placer cannot run here: checked without it"
    SICM_STATS=$tmp/ebusy.txt "$check" ebusy-no-placer || return 1
    grep -q "destroyed before: 2 arenas" "$tmp/ebusy.txt"
    return
  fi
  [ $rc -eq 0 ] && grep -q "destroyed before: 2 arenas" "$tmp/ebusy.txt" &&
    grep -q "placer: stopped" "$tmp/ebusy.txt"
}

another_users() { # root only: files another user made in a sticky directory
  if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
    echo "SKIP: needs root and setpriv to act as another user"
    return 0
  fi
  shared=$tmp/sticky
  chmod 755 "$tmp" && mkdir "$shared" && chmod 1777 "$shared" && echo secret > "$tmp/victim" ||
    return 1
  as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
  as_nobody touch "$shared/theirs.json" && as_nobody ln -s "$tmp/victim" "$shared/link.json" ||
    return 1
  refused_as "$shared/theirs.json" "another user's file" &&
    refused_as "$shared/link.json" "another user's symbolic link" &&
    [ ! -s "$shared/theirs.json" ] && [ "$(cat "$tmp/victim")" = secret ] &&
    ln -s "$tmp/mine.json" "$tmp/own-link.json" &&
    SICM_STATS=$tmp/own-link.json "$check" arenas 1 && [ -s "$tmp/mine.json" ]
}

refused_as() { # refused_as PATH WORDS: refused in one line saying WORDS
  err=$(SICM_STATS=$1 timeout 60 "$check" arenas 3 2>&1 >/dev/null)
  rc=$?
  echo "$err"
  [ $rc -eq 0 ] && [ "$(printf '%s\n' "$err" | grep -c .)" -eq 1 ] &&
    printf '%s\n' "$err" | grep -q "$2"
}

step "8 processes x 1000 arenas exit together: 8 whole JSON lines" together
step "the report's time is linear in the arenas" linear
mkfifo "$tmp/fifo"
step "a FIFO without a reader is refused, not waited on" refused "$tmp/fifo"
step "a FIFO with a reader is refused" fifo_with_reader
step "a device is refused" refused /dev/full
discarded() { # /dev/null: the report is discarded, without a word
  err=$(SICM_STATS=/dev/null timeout 60 "$check" arenas 3 2>&1 >/dev/null)
  rc=$?
  echo "$err"
  [ $rc -eq 0 ] && [ -z "$err" ]
}
step "/dev/null discards the report, silently" discarded
step "a write that fails is one line" write_fails
step "a last sicm_fini refused with EBUSY stops nothing" ebusy
step "another user's file or link at the path is refused; one's own link is followed" another_users
exit $failed
