#!/usr/bin/env bash
# A local, secure Nimbus-HA cluster on loopback: one ZooKeeper, three nimbuses,
# two supervisors, and the example topology (examples/wordcount) submitted by
# the admin.
#   scripts/quickstart.sh up              start afresh (stops a previous run and clears its state)
#   scripts/quickstart.sh down            stop everything it started, nothing else
#   scripts/quickstart.sh restart DAEMON  stop one daemon (SIGTERM) and start it again as itself:
#                                         nimbus-1..3 or supervisor-1..2 (make quickstart-restart DAEMON=...)
#
# Security is on, as README "Security" describes it: a throwaway CA and
# certificates (one per daemon, one for the admin, one for a second user),
# TLS with client certificates on every gRPC port and client, TLS on the
# metrics ports, authorization (nimbus.admins, nimbus.users,
# nimbus.supervisor.users, nimbus.daemon.users), and ZooKeeper digest ACLs with
# a random password, over TLS to ZooKeeper's secureClientPort (its only port). Workers do not run as their owners' users: that needs a
# root supervisor and a local user per principal, and the quickstart creates
# no users.
#
# State, certificates, logs and pid files live in .quickstart/:
#   storm.yaml              what every daemon shares (no secret in it)
#   zookeeper-auth          the ZooKeeper digest credentials, user:password (mode 0600);
#                           the daemons get them as STORM_ZOOKEEPER_AUTH_PAYLOAD
#   tls/                    ca.pem, ca-key.pem, NAME.pem and NAME-key.pem, and for
#                           ZooKeeper NAME-keystore.pem (key and certificate in one file)
#   admin.yaml, alice.yaml  stormctl's configuration as the admin and as the second user
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=$PWD/.quickstart
TLS=$DIR/tls
ZK_PORT=${QUICKSTART_ZK_PORT:-2191}
NIMBUS_PORTS=(6627 6637 6647)
UI_PORTS=(8080 8081 8082) # the REST API and web UI of each nimbus
SUPERVISOR_SLOTS=("6700,6701" "6710,6711")
SUPERVISOR_METRICS_PORTS=(6629 6639)
SUPERVISOR_CODE_PORTS=(6630 6640)
SUPERVISOR_LOGVIEWER_PORTS=(8000 8001)
ADMIN="admin"       # in nimbus.admins: may do everything
SECOND_USER="alice" # in nimbus.users: may submit, and act on her own topologies
ZK_USER="storm"     # the daemons' ZooKeeper identity

zk_classpath() {
  local cp=/etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/zookeeper-jute.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-simple.jar
  local j
  for j in /usr/share/java/netty-*.jar; do [ -e "$j" ] && cp+=":$j"; done
  echo "$cp"
}

zk_mode() { # prints the server's Mode line, if it answers within 2 s (over TLS: its only port)
  # A server still starting may take the command and never answer.
  printf srvr | timeout 2 openssl s_client -quiet -connect "127.0.0.1:$ZK_PORT" -CAfile "$TLS/ca.pem" \
    -cert "$TLS/zookeeper.pem" -key "$TLS/zookeeper-key.pem" 2>/dev/null | grep -m1 '^Mode:' || true
}

# ours says whether pid is a process this script started: its command line
# names the state directory (a pid file left by a run before a reboot may
# name someone else's process by now).
ours() { tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" | grep -qF "$DIR/"; }

# stop_pidfiles stops the processes the pid files name, together: SIGTERM,
# up to 5 s to exit, then SIGKILL. Only those processes, nothing else.
stop_pidfiles() {
  local f pid pids=()
  for f in "$@"; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    ours "$pid" || continue
    pids+=("$pid")
    kill -TERM "$pid" 2>/dev/null || true
  done
  local alive
  for _ in $(seq 50); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do
    if ours "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
  done
  rm -f "$@"
}

down() { # down [quiet]
  [ -d "$DIR" ] || { [ -n "${1:-}" ] || echo "quickstart: nothing running"; return 0; }
  # Supervisors first: their workers' keepers end the workers once no
  # supervisor is back within the adoption bound (about half the session).
  stop_pidfiles "$DIR"/supervisor-*.pid
  stop_pidfiles "$DIR"/nimbus-*.pid
  stop_pidfiles "$DIR/zookeeper.pid"
  [ -n "${1:-}" ] || echo "quickstart: stopped (state, certificates and logs kept in $DIR)"
}

# stormctl as the admin.
admin_ctl() { bin/stormctl --config "$DIR/$ADMIN.yaml" "$@"; }

# start_nimbus starts nimbus-i (1-based) on its ports and local dir, in the
# background, and records its pid.
start_nimbus() {
  local i=$1 port=${NIMBUS_PORTS[$(($1 - 1))]} ui=${UI_PORTS[$(($1 - 1))]}
  mkdir -p "$DIR/nimbus-$i"
  echo "quickstart: starting nimbus-$i on 127.0.0.1:$port (metrics :$((port + 1)), UI :$ui)"
  STORM_ZOOKEEPER_AUTH_PAYLOAD=$(<"$DIR/zookeeper-auth") setsid bin/nimbus --config "$DIR/storm.yaml" \
    --nimbus.host 127.0.0.1 --nimbus.grpc.port "$port" --nimbus.metrics.port "$((port + 1))" \
    --ui.port "$ui" \
    --storm.local.dir "$DIR/nimbus-$i" \
    --nimbus.grpc.tls.cert.path "$TLS/nimbus-$i.pem" --nimbus.grpc.tls.key.path "$TLS/nimbus-$i-key.pem" \
    --storm.zookeeper.ssl.keystore.path "$TLS/nimbus-$i-keystore.pem" \
    >>"$DIR/nimbus-$i.log" 2>&1 </dev/null &
  echo $! >"$DIR/nimbus-$i.pid"
}

# start_supervisor starts supervisor-i (1-based) on its slots, ports and
# local dir, in the background, and records its pid. Started again on the
# same local dir, it adopts the workers its predecessor left running.
start_supervisor() {
  local i=$1 slots=${SUPERVISOR_SLOTS[$(($1 - 1))]}
  local metrics=${SUPERVISOR_METRICS_PORTS[$(($1 - 1))]} code=${SUPERVISOR_CODE_PORTS[$(($1 - 1))]}
  local logviewer=${SUPERVISOR_LOGVIEWER_PORTS[$(($1 - 1))]}
  echo "quickstart: starting supervisor-$i with slots $slots (metrics :$metrics)"
  STORM_ZOOKEEPER_AUTH_PAYLOAD=$(<"$DIR/zookeeper-auth") setsid bin/supervisor --config "$DIR/storm.yaml" \
    --storm.local.hostname 127.0.0.1 --supervisor.slots.ports "$slots" \
    --storm.local.dir "$DIR/supervisor-$i" --supervisor.metrics.port "$metrics" --supervisor.grpc.port "$code" \
    --logviewer.port "$logviewer" \
    --nimbus.grpc.tls.cert.path "$TLS/supervisor-$i.pem" --nimbus.grpc.tls.key.path "$TLS/supervisor-$i-key.pem" \
    --storm.zookeeper.ssl.keystore.path "$TLS/supervisor-$i-keystore.pem" \
    >>"$DIR/supervisor-$i.log" 2>&1 </dev/null &
  echo $! >"$DIR/supervisor-$i.pid"
}

# worker_pids prints the example topology's workers, one line each: port
# pid.
worker_pids() {
  admin_ctl -o json topology wordcount 2>/dev/null | sed -n '/"workers": \[/,/^  \]/p' |
    grep -o '"port": *[0-9]*\|"pid": *[0-9]*' | grep -o '[0-9]*$' | paste -d ' ' - - | sort
}

# restart stops one daemon of a running quickstart with SIGTERM and starts
# it again as itself: what a rolling upgrade does to each daemon in turn.
restart() {
  local name=${1:-}
  case "$name" in
    nimbus-[1-3] | supervisor-[1-2]) ;;
    *) echo "quickstart: restart what? DAEMON=nimbus-1..3 or supervisor-1..2, e.g. make quickstart-restart DAEMON=nimbus-3" >&2; exit 2 ;;
  esac
  [ -f "$DIR/storm.yaml" ] || { echo "quickstart: no quickstart here; run make quickstart first" >&2; exit 1; }
  local before lines
  before=$(worker_pids)
  lines=$(wc -l <"$DIR/$name.log" 2>/dev/null || echo 0)
  echo "quickstart: stopping $name (SIGTERM)"
  stop_pidfiles "$DIR/$name.pid"
  case "$name" in
    nimbus-*) start_nimbus "${name#nimbus-}" ;;
    supervisor-*) start_supervisor "${name#supervisor-}" ;;
  esac
  for _ in $(seq 100); do
    # The new process's ready line: its log is appended to.
    tail -n +"$((lines + 1))" "$DIR/$name.log" | grep -q 'msg="\(nimbus\|supervisor\) ready"\|"msg":"\(nimbus\|supervisor\) ready"' &&
      admin_ctl leader >/dev/null 2>&1 && break
    sleep 0.1
  done
  echo "quickstart: $name is back (pid $(cat "$DIR/$name.pid")); the leader is $(leader_name)"
  if [ "$before" = "$(worker_pids)" ]; then
    echo "quickstart: every worker kept its pid (port pid):"
  else
    echo "quickstart: workers before and after (port pid) differ:"
    echo "$before"
    echo "--"
  fi
  worker_pids
}

# leader_name prints the name (nimbus-N) of the nimbus that leads now, as
# the cluster says (the leader's port), or nothing if none answers.
leader_name() {
  local port i
  port=$(admin_ctl -o json leader 2>/dev/null | grep -o '"port": *[0-9]*' | grep -o '[0-9]*$') || return 0
  for i in "${!NIMBUS_PORTS[@]}"; do
    if [ "${NIMBUS_PORTS[$i]}" = "$port" ]; then echo "nimbus-$((i + 1))"; fi
  done
}

# make_certs makes the throwaway CA and every certificate: daemons are TLS
# servers and clients (they fetch code from each other) on 127.0.0.1 and
# localhost; users are clients. A certificate's common name is its principal.
make_certs() {
  echo "quickstart: making a throwaway CA and certificates in $TLS"
  bin/stormctl tls ca create --dir "$TLS" --name "Nimbus-HA quickstart CA" >/dev/null
  local name
  for name in nimbus-1 nimbus-2 nimbus-3 supervisor-1 supervisor-2; do
    bin/stormctl tls cert create --dir "$TLS" --ca "$TLS/ca.pem" --ca-key "$TLS/ca-key.pem" \
      --name "$name" --server --client --host 127.0.0.1 --host localhost >/dev/null
  done
  for name in "$ADMIN" "$SECOND_USER"; do
    bin/stormctl tls cert create --dir "$TLS" --ca "$TLS/ca.pem" --ca-key "$TLS/ca-key.pem" \
      --name "$name" --client >/dev/null
  done
  bin/stormctl tls cert create --dir "$TLS" --ca "$TLS/ca.pem" --ca-key "$TLS/ca-key.pem" \
    --name zookeeper --server --client --host 127.0.0.1 --host localhost >/dev/null
  # ZooKeeper's PEM keystores (and storm.zookeeper.ssl.keystore.path): the
  # key and the certificate in one file.
  for name in nimbus-1 nimbus-2 nimbus-3 supervisor-1 supervisor-2 zookeeper; do
    (umask 077 && cat "$TLS/$name-key.pem" "$TLS/$name.pem" >"$TLS/$name-keystore.pem")
  done
}

# write_configs writes the daemons' shared configuration and one stormctl
# configuration per user. Paths are absolute: a relative path is read from
# the working directory, not from the file's.
write_configs() {
  local seeds_yaml=$1 u
  cat >"$DIR/storm.yaml" <<CFG
# The quickstart's cluster: what every daemon shares. Each daemon's own
# certificate, ports and directory are flags; the ZooKeeper password is not
# here but in zookeeper-auth (mode 0600), given to the daemons as
# STORM_ZOOKEEPER_AUTH_PAYLOAD.
storm.zookeeper.servers: ["127.0.0.1:$ZK_PORT"]
# Storm's default. A keeper keeps a worker whose supervisor stopped for about
# half of it (2/3 of it less a margin, SIGTERM a grace before), time enough
# for make quickstart-restart DAEMON=supervisor-N to adopt it.
storm.zookeeper.session.timeout: 20s
storm.zookeeper.auth.scheme: digest
# ZooKeeper serves TLS only; each daemon's keystore is a flag.
storm.zookeeper.ssl.enable: true
storm.zookeeper.ssl.truststore.path: "$TLS/ca.pem"
nimbus.seeds: $seeds_yaml
# A submission is acknowledged once two nimbuses hold its code, so the
# leader's failure never loses a topology (README: keep it at 2 or more).
topology.min.replication.count: 2
nimbus.grpc.tls.enable: true
nimbus.grpc.tls.truststore.path: "$TLS/ca.pem"
nimbus.grpc.tls.client.auth.required: true
nimbus.grpc.tls.principal: cn
nimbus.admins: ["$ADMIN"]
nimbus.users: ["$SECOND_USER"]
nimbus.supervisor.users: ["supervisor-1", "supervisor-2"]
nimbus.daemon.users: ["nimbus-1", "nimbus-2", "nimbus-3"]
storm.metrics.pprof.enable: false
supervisor.run.worker.as.user: false
supervisor.worker.env: []
CFG
  for u in "$ADMIN" "$SECOND_USER"; do
    cat >"$DIR/$u.yaml" <<CFG
# stormctl as $u on the quickstart cluster: bin/stormctl --config $DIR/$u.yaml leader
nimbus.seeds: $seeds_yaml
nimbus.grpc.tls.enable: true
nimbus.grpc.tls.truststore.path: "$TLS/ca.pem"
nimbus.grpc.tls.cert.path: "$TLS/$u.pem"
nimbus.grpc.tls.key.path: "$TLS/$u-key.pem"
CFG
  done
}

up() {
  # Ctrl-C while starting (or while stopping a previous run): stop what was
  # started, nothing else; a second Ctrl-C does not cut the stopping short.
  trap 'trap "" INT TERM; echo; echo "quickstart: interrupted; stopping"; down; exit 130' INT TERM
  down quiet
  rm -rf "$DIR" # a fresh cluster every time
  mkdir -p "$DIR/zookeeper"

  local seeds=() port
  for port in "${NIMBUS_PORTS[@]}"; do seeds+=("127.0.0.1:$port"); done
  local seedlist seeds_yaml
  seedlist=$(IFS=,; echo "${seeds[*]}")
  seeds_yaml="[$(printf '"%s", ' "${seeds[@]}" | sed 's/, $//')]"

  make_certs
  # The daemons' ZooKeeper identity: a random password, in a file only this
  # user reads, and in the daemons' environment (never on a command line,
  # which every user of the machine can see).
  (umask 077 && printf '%s:%s\n' "$ZK_USER" "$(head -c 18 /dev/urandom | base64 | tr -d '/+=')" >"$DIR/zookeeper-auth")
  write_configs "$seeds_yaml"

  cat >"$DIR/zoo.cfg" <<CFG
tickTime=500
initLimit=10
syncLimit=5
dataDir=$DIR/zookeeper
secureClientPort=$ZK_PORT
secureClientPortAddress=127.0.0.1
serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory
ssl.keyStore.location=$TLS/zookeeper-keystore.pem
ssl.keyStore.type=PEM
ssl.trustStore.location=$TLS/ca.pem
ssl.trustStore.type=PEM
ssl.clientAuth=need
ssl.hostnameVerification=false
admin.enableServer=false
4lw.commands.whitelist=*
CFG
  echo "quickstart: starting ZooKeeper on 127.0.0.1:$ZK_PORT (TLS only)"
  setsid java -Xmx256m -cp "$(zk_classpath)" org.apache.zookeeper.server.quorum.QuorumPeerMain "$DIR/zoo.cfg" \
    >"$DIR/zookeeper.log" 2>&1 </dev/null &
  echo $! >"$DIR/zookeeper.pid"
  for _ in $(seq 150); do zk_mode >/dev/null 2>&1 && [ -n "$(zk_mode)" ] && break; sleep 0.2; done
  [ -n "$(zk_mode 2>/dev/null)" ] || { echo "quickstart: ZooKeeper did not start; see $DIR/zookeeper.log"; down; exit 1; }

  local i
  for i in "${!NIMBUS_PORTS[@]}"; do start_nimbus $((i + 1)); done
  # Ready when a leader is elected and every nimbus is registered.
  for _ in $(seq 100); do
    [ "$(admin_ctl nimbuses 2>/dev/null | grep -c '127.0.0.1')" = "${#NIMBUS_PORTS[@]}" ] &&
      admin_ctl leader >/dev/null 2>&1 && break
    sleep 0.1
  done
  for i in "${!SUPERVISOR_SLOTS[@]}"; do start_supervisor $((i + 1)); done
  for _ in $(seq 100); do
    [ "$(admin_ctl supervisors 2>/dev/null | grep -c '^sup-')" = "${#SUPERVISOR_SLOTS[@]}" ] && break
    sleep 0.1
  done

  echo "quickstart: submitting the example topology (examples/wordcount/topology.yaml) as $ADMIN"
  admin_ctl submit -f examples/wordcount/topology.yaml bin/wordcount
  # Settled when both workers run (list says "active" and 2/2 running, not
  # merely assigned) and both other nimbuses hold the code.
  for _ in $(seq 300); do
    admin_ctl list 2>/dev/null | grep -Eq '^wordcount +[^ ]+ +active +2/2 ' &&
      admin_ctl cluster 2>/dev/null | grep -q 'eligible standbys: 2' && break
    sleep 0.1
  done
  trap - INT TERM

  echo
  admin_ctl cluster
  echo
  admin_ctl topology wordcount
  local q=.quickstart # as the commands below are typed, from the repository
  # The hints name the nimbus that leads now, whichever won the election.
  local leader metrics metrics_of stop_hint
  leader=$(leader_name)
  metrics=$((NIMBUS_PORTS[0] + 1)) metrics_of=nimbus-1
  stop_hint="kill \$(cat $q/nimbus-1.pid)    # stop a nimbus; bin/stormctl --config $q/$ADMIN.yaml leader says which leads"
  if [ -n "$leader" ]; then
    local port=${NIMBUS_PORTS[${leader#nimbus-} - 1]}
    metrics=$((port + 1)) metrics_of="the leader, $leader"
    stop_hint="kill \$(cat $q/$leader.pid)    # stop the leader, $leader (127.0.0.1:$port): another leads at once"
  fi
  local workers_as
  workers_as="you ($(id -un))"
  [ "$(id -u)" = 0 ] && workers_as="root"
  cat <<MSG

Nimbus-HA is running on loopback, with security on: TLS with client
certificates on every gRPC port, TLS on the metrics ports, ZooKeeper digest
ACLs. The example topology's workers run on the supervisors; their logs are
in $q/supervisor-*/workers-artifacts/ and served by each supervisor's
logviewer (bin/stormctl --config $q/$ADMIN.yaml logs wordcount -f).

stormctl as $ADMIN (nimbus.admins: may do everything):
  bin/stormctl --config $q/$ADMIN.yaml leader
  bin/stormctl --config $q/$ADMIN.yaml list
  bin/stormctl --config $q/$ADMIN.yaml rebalance wordcount --workers 4 --wait 0

stormctl as $SECOND_USER (nimbus.users): may read the cluster, submit, and kill,
rebalance, activate and deactivate her own topologies and those whose
topology.users name her; may not touch $ADMIN's wordcount, nor fetch its code:
  bin/stormctl --config $q/$SECOND_USER.yaml list
  bin/stormctl --config $q/$SECOND_USER.yaml kill wordcount      # refused: permission denied (exit 7)
  bin/stormctl --config $q/$SECOND_USER.yaml submit -f examples/wordcount/topology.yaml --name mine \\
      --workers 1 --component split=1 --component count=1
  bin/stormctl --config $q/$SECOND_USER.yaml kill mine --wait 0

The same as environment variables, for every stormctl of a shell (here as $SECOND_USER;
absolute paths, so they work from any directory):
  export STORM_NIMBUS_SEEDS=$seedlist STORM_NIMBUS_GRPC_TLS_ENABLE=true
  export STORM_NIMBUS_GRPC_TLS_TRUSTSTORE_PATH=$TLS/ca.pem
  export STORM_NIMBUS_GRPC_TLS_CERT_PATH=$TLS/$SECOND_USER.pem STORM_NIMBUS_GRPC_TLS_KEY_PATH=$TLS/$SECOND_USER-key.pem
  bin/stormctl leader

Without TLS and a certificate the CA signed, nothing answers:
  bin/stormctl --seeds ${seeds[0]} leader      # no nimbus answered
Storm's REST API and the web UI, on every nimbus (here nimbus-1), over TLS as $ADMIN:
  curl --cacert $q/tls/ca.pem --cert $q/tls/$ADMIN.pem --key $q/tls/$ADMIN-key.pem \\
      https://127.0.0.1:${UI_PORTS[0]}/api/v1/cluster/summary
  In a browser: bin/stormctl --config $q/$ADMIN.yaml ui
  (a local proxy with $ADMIN's certificate; open the http://127.0.0.1:8001/?token=... it prints).
Metrics of $metrics_of, over TLS (no client certificate; pprof is off):
  curl --cacert $q/tls/ca.pem https://127.0.0.1:$metrics/metrics
ZooKeeper: TLS only, on 127.0.0.1:$ZK_PORT (client certificates required);
anyone with one may read under /storm, only the daemons may write (their
password: $q/zookeeper-auth, mode 0600).
Workers run as $workers_as, as the supervisors do: supervisor.run.worker.as.user
is off (README, "Security").

  $stop_hint
Try an upgrade's moves (README, "Try it by hand"):
  make quickstart-restart DAEMON=supervisor-1    # its workers keep running, same pids
  bin/stormctl --config $q/$ADMIN.yaml admin handover    # leadership to the next nimbus
  make quickstart-restart DAEMON=${leader:-nimbus-1}    # a leader restarted hands over first
Logs: $q/*.log
Stop everything: make quickstart-down
MSG
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  restart) restart "${2:-}" ;;
  *) echo "usage: $0 up|down|restart DAEMON" >&2; exit 2 ;;
esac
