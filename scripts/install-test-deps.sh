#!/usr/bin/env bash
# Installs what the tests run against: Debian's zookeeper package and a Java
# runtime, Chromium (the web UI's browser test drives it headless), iptables
# and iproute2's ss (a firewall that resets a leader's connections), rpm and
# systemd's systemd-analyze (the packages and units of deploy/), and the
# Hadoop jars of the HDFS NameNode and DataNode. The tests
# start their own servers (internal/testkit/testcluster); the zookeeper package ships no
# service (zookeeperd does), so no system server starts.
#
# The Hadoop jars come from Maven Central (mvn dependency:copy-dependencies on
# internal/testkit/testcluster/hdfs/pom.xml, Maven installed from apt if missing) into
# ${NIMBUS_HDFS_JARS:-~/.cache/nimbus/hdfs-<version>}, outside the repository,
# once: a .fetched file marks a complete copy.
#
# Idempotent and quiet: prints one line per package it installs, and one when
# it fetches the jars.
#
# With "quickstart" as its argument it installs only what `make quickstart`
# runs: ZooKeeper and the Java runtime, no Maven, no Chromium and no Hadoop jars.
set -euo pipefail
only_zookeeper=false
[[ ${1:-} == quickstart ]] && only_zookeeper=true

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
hdfs_pom=$root/internal/testkit/testcluster/hdfs/pom.xml
hadoop_version=$(sed -n 's:.*<hadoop\.version>\(.*\)</hadoop\.version>.*:\1:p' "$hdfs_pom")
[[ -n $hadoop_version ]] || {
	echo "install-test-deps: no hadoop.version in $hdfs_pom" >&2
	exit 1
}
hdfs_jars=${NIMBUS_HDFS_JARS:-$HOME/.cache/nimbus/hdfs-$hadoop_version}
hdfs_marker=$hdfs_jars/.fetched # internal/testkit/testcluster/hdfs.go looks for it

pkgs=()
[[ -f /usr/share/java/zookeeper.jar ]] || pkgs+=(zookeeper)
java -version >/dev/null 2>&1 || pkgs+=(default-jre-headless)
command -v openssl >/dev/null || pkgs+=(openssl) # the quickstart asks its TLS-only ZooKeeper for its mode
$only_zookeeper || [[ -f $hdfs_marker ]] || command -v mvn >/dev/null || pkgs+=(maven)
$only_zookeeper || command -v chromium >/dev/null || pkgs+=(chromium)
$only_zookeeper || command -v iptables >/dev/null || pkgs+=(iptables)
$only_zookeeper || command -v ss >/dev/null || pkgs+=(iproute2)
$only_zookeeper || command -v buildah >/dev/null || pkgs+=(buildah)                  # deploy/k8s: the image built
$only_zookeeper || command -v rpm >/dev/null || pkgs+=(rpm)                          # deploy: the .rpm inspected
$only_zookeeper || command -v systemd-analyze >/dev/null || pkgs+=(systemd)          # deploy: the units verified

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log=$tmp/log

if ((${#pkgs[@]})); then
	sudo=()
	if ((EUID != 0)); then
		command -v sudo >/dev/null || {
			echo "install-test-deps: root or sudo needed to install ${pkgs[*]}" >&2
			exit 1
		}
		sudo=(sudo)
	fi
	apt() { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "$@" >>"$log" 2>&1; }
	if ! apt update -qq || ! apt install -y -qq --no-install-recommends "${pkgs[@]}"; then
		cat "$log" >&2
		echo "install-test-deps: apt-get failed to install ${pkgs[*]}" >&2
		exit 1
	fi
	for p in "${pkgs[@]}"; do
		echo "install-test-deps: installed $p"
	done
fi

$only_zookeeper && exit 0
[[ -f $hdfs_marker ]] && exit 0
# A throwaway local repository: the jars are kept only in $hdfs_jars.
# overWriteReleases replaces jars an interrupted run may have truncated.
mkdir -p "$hdfs_jars"
start=$SECONDS
if ! mvn -q -B -f "$hdfs_pom" -Dmaven.repo.local="$tmp/m2" \
	dependency:copy-dependencies -DincludeScope=runtime -Dmdep.overWriteReleases=true \
	-DoutputDirectory="$hdfs_jars" >>"$log" 2>&1; then
	cat "$log" >&2
	echo "install-test-deps: mvn failed to fetch the Hadoop $hadoop_version jars into $hdfs_jars" >&2
	exit 1
fi
touch "$hdfs_marker"
echo "install-test-deps: fetched the Hadoop $hadoop_version jars ($(du -sh "$hdfs_jars" | cut -f1)) into $hdfs_jars in $((SECONDS - start)) s"
