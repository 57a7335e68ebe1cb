#!/bin/sh
# Before the files are unpacked (deb preinst, rpm %pre): the storm system
# user and group, which own /var/lib/storm and read /etc/storm/storm.yaml.
set -e
if ! getent group storm >/dev/null; then
	groupadd --system storm
fi
if ! getent passwd storm >/dev/null; then
	nologin=$(command -v nologin || echo /usr/sbin/nologin)
	useradd --system --gid storm --home-dir /var/lib/storm --no-create-home \
		--shell "$nologin" --comment "Nimbus-HA daemons" storm
fi
