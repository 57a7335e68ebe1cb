package daemon

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// listenNotify is a service manager's end: a datagram socket at name
// (a path, or '@' and an abstract name), named by $NOTIFY_SOCKET.
func listenNotify(t *testing.T, name string) *net.UnixConn {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv(notifySocketEnv, name)
	return conn
}

func readNotification(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	if err := conn.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("no notification: %v", err)
	}
	return string(buf[:n])
}

// The ready line is followed by READY=1 with the line as the status, and
// Close begins with STOPPING=1, once.
func TestLifecycleNotifiesReadyAndStopping(t *testing.T) {
	dir, err := os.MkdirTemp("", "notify") // t.TempDir's path may exceed a socket address
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	conn := listenNotify(t, filepath.Join(dir, "notify.sock"))

	var l Lifecycle
	stopped := false
	l.OnClose(func() { stopped = true })
	l.Announce(t.Context(), slog.New(slog.NewTextHandler(io.Discard, nil)), "nimbus ready", func() []any { return nil })
	if got, want := readNotification(t, conn), "READY=1\nSTATUS=nimbus ready"; got != want {
		t.Fatalf("after the ready line the manager heard %q, want %q", got, want)
	}
	l.Close()
	if got := readNotification(t, conn); got != NotifyStopping {
		t.Fatalf("on Close the manager heard %q, want %q", got, NotifyStopping)
	}
	if !stopped {
		t.Fatal("Close ran no stop")
	}
	l.Close()
	if err := Notify("MARK=1"); err != nil { // datagrams arrive in order: the next one read is the mark
		t.Fatal(err)
	}
	if got := readNotification(t, conn); got != "MARK=1" {
		t.Fatalf("a second Close notified again: %q", got)
	}
}

func TestNotifyAbstractSocket(t *testing.T) {
	conn := listenNotify(t, fmt.Sprintf("@nimbus-notify-test-%d", os.Getpid()))
	if err := Notify(NotifyReady); err != nil {
		t.Fatal(err)
	}
	if got := readNotification(t, conn); got != NotifyReady {
		t.Fatalf("heard %q, want %q", got, NotifyReady)
	}
}

func TestNotifyWithoutAManager(t *testing.T) {
	t.Setenv(notifySocketEnv, "")
	if err := Notify(NotifyReady); err != nil {
		t.Fatalf("without %s: %v", notifySocketEnv, err)
	}
	t.Setenv(notifySocketEnv, filepath.Join(t.TempDir(), "absent.sock"))
	if err := Notify(NotifyReady); err == nil {
		t.Fatal("a socket nobody listens on: no error")
	}
}
