package testcluster

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
)

// hdfsClient opens a client as HDFSUser whose connections dial with a
// timeout; they are cut, and the client closed, at the end of the test.
func hdfsClient(t *testing.T, addr string) (*hdfs.Client, error) {
	d := &closingDialer{}
	c, err := hdfs.NewClient(hdfs.ClientOptions{
		Addresses:        []string{addr},
		User:             HDFSUser,
		NamenodeDialFunc: d.DialContext,
		DatanodeDialFunc: d.DialContext,
	})
	if err != nil {
		d.closeAll()
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	t.Cleanup(d.closeAll) // first: ends a call that never returned, which Close would wait for
	return c, nil
}

// errNoAnswer is inTime's error for an op that did not return in time.
var errNoAnswer = errors.New("no answer in time")

// inTime runs op and returns its error, or errNoAnswer if it takes longer
// than d. The op's goroutine ends when its client's connections are cut.
func inTime(d time.Duration, op func() error) error {
	done := make(chan error, 1)
	go func() { done <- op() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		return fmt.Errorf("%w (%v)", errNoAnswer, d)
	}
}

func TestHDFS(t *testing.T) {
	h := StartHDFS(t)
	c, err := hdfsClient(t, h.Addr())
	if err != nil {
		t.Fatalf("client: %v", err)
	}

	const name = "/nimbus/data.bin"
	want := make([]byte, 3<<20)
	rand.NewChaCha8([32]byte{1}).Read(want)
	if err := c.MkdirAll("/nimbus", 0o755); err != nil {
		t.Fatalf("mkdir: %v", err)
	}
	w, err := c.Create(name)
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	if _, err := w.Write(want); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
	if err := closeHDFSFile(w, 10*time.Second); err != nil {
		t.Fatalf("close %s: %v", name, err)
	}
	readBack := func(c *hdfs.Client) error {
		got, err := c.ReadFile(name)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("read %d bytes from %s, not the %d written", len(got), name, len(want))
		}
		return nil
	}
	if err := readBack(c); err != nil {
		t.Fatal(err)
	}

	h.StopNameNode()
	err = inTime(10*time.Second, func() error { _, err := c.Stat(name); return err })
	if err == nil || errors.Is(err, errNoAnswer) {
		t.Fatalf("stat with the NameNode stopped: %v, want an error at once", err)
	}
	t.Logf("stat with the NameNode stopped: %v", err)
	if _, err := hdfsClient(t, h.Addr()); err == nil {
		t.Fatal("new client with the NameNode stopped: no error")
	}

	start := time.Now()
	h.StartNameNode()
	t.Logf("NameNode restarted and ready in %v", time.Since(start).Round(time.Millisecond))
	fresh, err := hdfsClient(t, h.Addr())
	if err != nil {
		t.Fatalf("client after restart: %v", err)
	}
	if err := readBack(fresh); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}

// TestHDFSVersion checks that the harness looks for the jars the pom fetches.
func TestHDFSVersion(t *testing.T) {
	pom, err := os.ReadFile("hdfs/pom.xml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<hadoop\.version>([^<]+)</hadoop\.version>`).FindSubmatch(pom)
	if m == nil || string(m[1]) != hdfsVersion {
		t.Fatalf("hdfs/pom.xml hadoop.version %q, hdfs.go hdfsVersion %q: keep them equal", m, hdfsVersion)
	}
}
