#!/usr/bin/env bash
# Installs what the tests run against: Debian's zookeeper package and a Java
# runtime. The tests start their own servers (internal/testenv); the zookeeper
# package ships no service (zookeeperd does), so no system server starts.
# Idempotent and quiet: prints one line per package it installs.
set -euo pipefail

pkgs=()
[[ -f /usr/share/java/zookeeper.jar ]] || pkgs+=(zookeeper)
java -version >/dev/null 2>&1 || pkgs+=(default-jre-headless)
((${#pkgs[@]})) || exit 0

sudo=()
if ((EUID != 0)); then
	command -v sudo >/dev/null || {
		echo "install-test-deps: root or sudo needed to install ${pkgs[*]}" >&2
		exit 1
	}
	sudo=(sudo)
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
apt() { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "$@" >>"$log" 2>&1; }
if ! apt update -qq || ! apt install -y -qq --no-install-recommends "${pkgs[@]}"; then
	cat "$log" >&2
	echo "install-test-deps: apt-get failed to install ${pkgs[*]}" >&2
	exit 1
fi
for p in "${pkgs[@]}"; do
	echo "install-test-deps: installed $p"
done
