#!/usr/bin/env bash
# A local Nimbus-HA cluster on loopback: one ZooKeeper, three nimbuses, two
# supervisors, and the example topology (examples/wordcount) submitted.
#   scripts/quickstart.sh up     start afresh (stops a previous run and clears its state)
#   scripts/quickstart.sh down   stop everything it started, nothing else
# State, logs and pid files live in .quickstart/.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=$PWD/.quickstart
ZK_PORT=${QUICKSTART_ZK_PORT:-2191}
NIMBUS_PORTS=(6627 6637 6647)
SUPERVISOR_SLOTS=("6700,6701" "6710,6711")
SUPERVISOR_METRICS_PORTS=(6629 6639)

zk_classpath() {
  local cp=/etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/zookeeper-jute.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-simple.jar
  local j
  for j in /usr/share/java/netty-*.jar; do [ -e "$j" ] && cp+=":$j"; done
  echo "$cp"
}

zk_mode() { # prints the server's Mode line, if it answers
  exec 3<>"/dev/tcp/127.0.0.1/$ZK_PORT" 2>/dev/null || return 1
  printf srvr >&3
  grep -m1 '^Mode:' <&3 || true
  exec 3<&- 3>&-
}

stop_pidfile() {
  local f=$1 pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

down() {
  [ -d "$DIR" ] || { echo "quickstart: nothing running"; return 0; }
  for f in "$DIR"/supervisor-*.pid "$DIR"/nimbus-*.pid; do [ -e "$f" ] && stop_pidfile "$f"; done
  stop_pidfile "$DIR/zookeeper.pid"
  echo "quickstart: stopped (state and logs kept in $DIR)"
}

up() {
  down >/dev/null
  rm -rf "$DIR" # a fresh cluster every time
  # Ctrl-C while starting: stop what was started, nothing else.
  trap 'echo; echo "quickstart: interrupted; stopping"; down; exit 130' INT TERM
  mkdir -p "$DIR/zookeeper"
  cat >"$DIR/zoo.cfg" <<CFG
tickTime=500
initLimit=10
syncLimit=5
dataDir=$DIR/zookeeper
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=*
CFG
  echo "quickstart: starting ZooKeeper on 127.0.0.1:$ZK_PORT"
  setsid java -Xmx256m -cp "$(zk_classpath)" org.apache.zookeeper.server.quorum.QuorumPeerMain "$DIR/zoo.cfg" \
    >"$DIR/zookeeper.log" 2>&1 </dev/null &
  echo $! >"$DIR/zookeeper.pid"
  for _ in $(seq 150); do zk_mode >/dev/null 2>&1 && [ -n "$(zk_mode)" ] && break; sleep 0.2; done
  [ -n "$(zk_mode 2>/dev/null)" ] || { echo "quickstart: ZooKeeper did not start; see $DIR/zookeeper.log"; exit 1; }

  local seeds=() i=0 port
  for port in "${NIMBUS_PORTS[@]}"; do
    i=$((i + 1))
    mkdir -p "$DIR/nimbus-$i"
    echo "quickstart: starting nimbus-$i on 127.0.0.1:$port (metrics :$((port + 1)))"
    setsid bin/nimbus --config configs/storm.yaml \
      --storm.zookeeper.servers "127.0.0.1:$ZK_PORT" --nimbus.host 127.0.0.1 \
      --nimbus.grpc.port "$port" --nimbus.metrics.port "$((port + 1))" \
      --storm.local.dir "$DIR/nimbus-$i" --storm.zookeeper.session.timeout 5s \
      >"$DIR/nimbus-$i.log" 2>&1 </dev/null &
    echo $! >"$DIR/nimbus-$i.pid"
    seeds+=("127.0.0.1:$port")
  done
  local seedlist
  seedlist=$(IFS=,; echo "${seeds[*]}")
  # Ready when a leader is elected and every nimbus is registered.
  for _ in $(seq 100); do
    [ "$(bin/stormctl --seeds "$seedlist" nimbuses 2>/dev/null | grep -c '127.0.0.1')" = "${#NIMBUS_PORTS[@]}" ] &&
      bin/stormctl --seeds "$seedlist" leader >/dev/null 2>&1 && break
    sleep 0.1
  done
  local slots
  i=0
  for slots in "${SUPERVISOR_SLOTS[@]}"; do
    i=$((i + 1))
    local metrics=${SUPERVISOR_METRICS_PORTS[$((i - 1))]}
    echo "quickstart: starting supervisor-$i with slots $slots (metrics :$metrics)"
    setsid bin/supervisor --config configs/storm.yaml \
      --storm.zookeeper.servers "127.0.0.1:$ZK_PORT" --storm.local.hostname 127.0.0.1 \
      --supervisor.slots.ports "$slots" --storm.local.dir "$DIR/supervisor-$i" \
      --supervisor.metrics.port "$metrics" \
      --storm.zookeeper.session.timeout 5s \
      >"$DIR/supervisor-$i.log" 2>&1 </dev/null &
    echo $! >"$DIR/supervisor-$i.pid"
  done
  for _ in $(seq 100); do
    [ "$(bin/stormctl --seeds "$seedlist" supervisors 2>/dev/null | grep -c '^sup-')" = "${#SUPERVISOR_SLOTS[@]}" ] && break
    sleep 0.1
  done

  echo "quickstart: submitting the example topology (examples/wordcount)"
  bin/stormctl --seeds "$seedlist" submit wordcount bin/wordcount --workers 2 \
    --component sentence=1 --component split=2 --component count=3 \
    --worker-command "{code_dir}/artifact --port {port}"
  # Settled when both workers run and both other nimbuses hold the code.
  for _ in $(seq 200); do
    [ "$(bin/stormctl --seeds "$seedlist" supervisors 2>/dev/null | awk 'NR > 1 { used += $5 } END { print used + 0 }')" = 2 ] &&
      bin/stormctl --seeds "$seedlist" cluster 2>/dev/null | grep -q 'eligible standbys: 2' && break
    sleep 0.1
  done
  trap - INT TERM

  echo
  bin/stormctl --seeds "$seedlist" cluster
  echo
  bin/stormctl --seeds "$seedlist" topology wordcount
  cat <<MSG

Nimbus-HA is running on loopback, with the example topology's workers on the
supervisors (their logs: $DIR/supervisor-*/supervisor/workers/). Try:
  export STORM_NIMBUS_SEEDS=$seedlist
  bin/stormctl leader
  bin/stormctl rebalance wordcount --workers 4 --wait 0
  kill \$(cat $DIR/nimbus-1.pid)    # stop a nimbus: another leads at once
Logs: $DIR/*.log
Stop everything: make quickstart-down
MSG
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
