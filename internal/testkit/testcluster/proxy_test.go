package testcluster

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// heldFor is how long a test watches for bytes that must not arrive while a
// direction is held. Their absence for this long is the evidence: the
// assertion is that nothing arrives while held, not that something never
// will.
const heldFor = 200 * time.Millisecond

// echoServer answers every line with the same line, sends every line it
// reads to got and every connection it accepts to accepted (the test may
// write to it unasked).
func echoServer(t *testing.T) (addr string, got <-chan string, accepted <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	lines := make(chan string, 100)
	conns := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case conns <- c:
			default:
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					lines <- strings.TrimSpace(line)
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), lines, conns
}

// send writes line and returns the answer, or the read's error after
// wait.
func send(t *testing.T, c net.Conn, r *bufio.Reader, line string, wait time.Duration) (string, error) {
	t.Helper()
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	return receive(c, r, wait)
}

// receive reads one line, or returns the read's error after wait.
func receive(c net.Conn, r *bufio.Reader, wait time.Duration) (string, error) {
	c.SetReadDeadline(time.Now().Add(wait))
	got, err := r.ReadString('\n')
	return strings.TrimSpace(got), err
}

// heard returns the next line the server read, failing the test if there
// is none within 5 s.
func heard(t *testing.T, got <-chan string) string {
	t.Helper()
	select {
	case line := <-got:
		return line
	case <-time.After(5 * time.Second):
		t.Fatal("the server heard nothing in 5 s")
		return ""
	}
}

// dial connects to p and checks one line goes through both ways.
func dial(t *testing.T, p *Proxy, got <-chan string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := bufio.NewReader(c)
	if ans, err := send(t, c, r, "one", 5*time.Second); err != nil || ans != "one" {
		t.Fatalf("through the proxy: %q, %v", ans, err)
	}
	if line := heard(t, got); line != "one" {
		t.Fatalf("the server heard %q, want one", line)
	}
	return c, r
}

func TestProxyDropHoldsAnswersUntilRestore(t *testing.T) {
	addr, got, _ := echoServer(t)
	p := StartProxy(t, addr)
	c, r := dial(t, p, got)

	// Answers held: the server hears the client, the client hears nothing.
	p.Drop(FromUpstream)
	if _, err := c.Write([]byte("two\nthree\n")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"two", "three"} {
		if line := heard(t, got); line != want {
			t.Fatalf("answers held, the server heard %q, want %q", line, want)
		}
	}
	if ans, err := receive(c, r, heldFor); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("answers held, the client read %q, %v; want nothing", ans, err)
	}

	// Restored: the held answers arrive, in order, on the same connection.
	p.Restore()
	for _, want := range []string{"two", "three"} {
		if ans, err := receive(c, r, 5*time.Second); err != nil || ans != want {
			t.Fatalf("restored, the client read %q, %v; want %q", ans, err, want)
		}
	}
	if ans, err := send(t, c, r, "four", 5*time.Second); err != nil || ans != "four" {
		t.Fatalf("restored: %q, %v", ans, err)
	}
}

func TestProxyDropHoldsRequestsUntilRestore(t *testing.T) {
	addr, got, accepted := echoServer(t)
	p := StartProxy(t, addr)
	c, r := dial(t, p, got)
	server := <-accepted

	// Requests held: more than the proxy's buffer, from a goroutine of
	// their own since TCP's flow control may block the writer until
	// Restore.
	p.Drop(ToUpstream)
	var want []string
	for i := range 64 {
		want = append(want, fmt.Sprintf("%03d %s", i, strings.Repeat("x", 2000)))
	}
	wrote := make(chan error, 1)
	go func() {
		_, err := c.Write([]byte(strings.Join(want, "\n") + "\n"))
		wrote <- err
	}()
	select {
	case line := <-got:
		t.Fatalf("requests held, the server heard %.10q", line)
	case <-time.After(heldFor):
	}

	// The other way still works: the client hears what the server says.
	if _, err := server.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	if ans, err := receive(c, r, 5*time.Second); err != nil || ans != "hello" {
		t.Fatalf("requests held, the client read %q, %v; want hello", ans, err)
	}

	// Restored: every held request reaches the server, complete and in
	// order, and is answered.
	p.Restore()
	for i, w := range want {
		if line := heard(t, got); line != w {
			t.Fatalf("restored, request %d: the server heard %.10q (%d bytes), want %.10q (%d bytes)", i, line, len(line), w, len(w))
		}
		if ans, err := receive(c, r, 5*time.Second); err != nil || ans != w {
			t.Fatalf("restored, answer %d: the client read %.10q, %v", i, ans, err)
		}
	}
	if err := <-wrote; err != nil {
		t.Fatalf("writing the held requests: %v", err)
	}
}

func TestProxyCloseWhileHeld(t *testing.T) {
	addr, got, accepted := echoServer(t)
	before := runtime.NumGoroutine()
	p := StartProxy(t, addr)
	c, r := dial(t, p, got)
	<-accepted

	// Both ways held, with a request read by the proxy and kept, and a new
	// connection that must not reach the server until requests pass.
	p.Drop()
	if ans, err := send(t, c, r, "two", heldFor); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("held, the client read %q, %v; want nothing", ans, err)
	}
	late, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	select {
	case line := <-got:
		t.Fatalf("held, the server heard %q", line)
	case <-accepted:
		t.Fatal("held, a connection opened meanwhile reached the server")
	case <-time.After(heldFor):
	}

	closed := make(chan struct{})
	go func() {
		p.close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("close did not return while both ways were held")
	}
	for _, conn := range []net.Conn{c, late} {
		buf := make([]byte, 1)
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Read(buf); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("after close the client read %v; want the connection closed", err)
		}
		conn.Close()
	}
	WaitFor(t, 5*time.Second, "the proxy's goroutines to end", func() error {
		if n := runtime.NumGoroutine(); n > before {
			return fmt.Errorf("%d goroutines, %d before the proxy started", n, before)
		}
		return nil
	})
}

func TestProxyCutClosesConnections(t *testing.T) {
	for _, held := range []bool{false, true} {
		t.Run(fmt.Sprintf("held=%v", held), func(t *testing.T) {
			addr, got, _ := echoServer(t)
			p := StartProxy(t, addr)
			c, r := dial(t, p, got)
			if held {
				p.Drop()
			}
			p.Cut()
			if ans, err := send(t, c, r, "two", 5*time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("after Cut the client read %q, %v; want the connection closed", ans, err)
			}
		})
	}
}
