package daemon

import (
	"fmt"
	"net"
	"os"
)

// notifySocketEnv names the service manager's notification socket
// (sd_notify(3)): systemd sets it for a unit of Type=notify.
const notifySocketEnv = "NOTIFY_SOCKET"

// Notification states a daemon sends its service manager.
const (
	NotifyReady    = "READY=1"    // the ready line is logged: a unit's start has finished
	NotifyStopping = "STOPPING=1" // a stop has begun: the unit is deactivating
)

// Notify sends state (one or more newline-separated VAR=value
// assignments) in one datagram to the socket $NOTIFY_SOCKET names, as
// sd_notify(3) does; without the variable it does nothing. A name
// beginning with '@' is in the abstract namespace, which package net
// maps as systemd does. It does not block on the manager.
func Notify(state string) error {
	path := os.Getenv(notifySocketEnv)
	if path == "" {
		return nil
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("daemon: notify %s: %w", notifySocketEnv, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("daemon: notify %s: %w", notifySocketEnv, err)
	}
	return nil
}
