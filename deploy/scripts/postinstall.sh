#!/bin/sh
# After the files are unpacked (deb postinst "configure" [old version], rpm
# %post with 1 on install, 2 on upgrade).
#
# A first install starts and enables nothing: the sample configuration
# points at a ZooKeeper on localhost, and a host is a nimbus, a supervisor
# or both, which only the operator knows. An upgrade restarts the daemons
# that run, each on its new binary, as a rolling upgrade does one host at a
# time: a nimbus stopped with SIGTERM hands leadership over before it
# drains, a supervisor leaves its workers to their keepers (KillMode=process)
# and the new one adopts them.
set -e
units="storm-nimbus.service storm-supervisor.service"
upgrade=false
case "$1" in
configure) [ -n "$2" ] && upgrade=true ;;
[0-9]*) [ "$1" -ge 2 ] && upgrade=true ;; # rpm: the count of installed versions
esac
[ -d /run/systemd/system ] || exit 0 # not booted with systemd (a container, a chroot)
systemctl daemon-reload || true
if $upgrade; then
	systemctl try-restart $units || true
fi
