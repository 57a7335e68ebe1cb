#!/bin/sh
# Before the files are removed (deb prerm "remove", rpm %preun with 0 on
# removal; nothing on an upgrade, which postinstall restarts): stop and
# disable the daemons. A nimbus hands leadership over as it stops; a
# supervisor's workers end with their keepers' adoption bound.
set -e
units="storm-nimbus.service storm-supervisor.service"
case "$1" in
remove | 0) ;;
*) exit 0 ;;
esac
command -v systemctl >/dev/null || exit 0
systemctl disable $units >/dev/null 2>&1 || true
if [ -d /run/systemd/system ]; then
	systemctl stop $units || true
fi
