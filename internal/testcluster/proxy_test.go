package testcluster

import (
	"bufio"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// echoServer answers every line with the same line, and sends every line
// it reads to got.
func echoServer(t *testing.T) (addr string, got <-chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	lines := make(chan string, 100)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
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
	return ln.Addr().String(), lines
}

// send writes line and returns the answer, or the read's error after
// wait.
func send(t *testing.T, c net.Conn, r *bufio.Reader, line string, wait time.Duration) (string, error) {
	t.Helper()
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	c.SetReadDeadline(time.Now().Add(wait))
	got, err := r.ReadString('\n')
	return strings.TrimSpace(got), err
}

func TestProxyDropsOneWayAndRestores(t *testing.T) {
	addr, got := echoServer(t)
	p := StartProxy(t, addr)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if ans, err := send(t, c, r, "one", 5*time.Second); err != nil || ans != "one" {
		t.Fatalf("through the proxy: %q, %v", ans, err)
	}
	<-got

	// Answers dropped: the server hears the client, the client hears nothing.
	p.Drop(FromUpstream)
	if ans, err := send(t, c, r, "two", 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("answers dropped, the client read %q, %v; want a timeout", ans, err)
	}
	select {
	case line := <-got:
		if line != "two" {
			t.Fatalf("the server read %q, want two", line)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("answers dropped, the server did not hear the client")
	}

	// Requests dropped: the server hears nothing.
	p.Restore()
	p.Drop(ToUpstream)
	if ans, err := send(t, c, r, "three", 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("requests dropped, the client read %q, %v; want a timeout", ans, err)
	}
	select {
	case line := <-got:
		t.Fatalf("requests dropped, the server read %q", line)
	default:
	}

	// Restored: the same connection carries both ways again.
	p.Restore()
	if ans, err := send(t, c, r, "four", 5*time.Second); err != nil || ans != "four" {
		t.Fatalf("restored: %q, %v", ans, err)
	}
}

func TestProxyCutClosesConnections(t *testing.T) {
	addr, _ := echoServer(t)
	p := StartProxy(t, addr)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if _, err := send(t, c, r, "one", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	if ans, err := send(t, c, r, "two", 5*time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("after Cut the client read %q, %v; want the connection closed", ans, err)
	}
}
