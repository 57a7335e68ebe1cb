// Command blobworker is a worker that follows its blobs with the worker
// library (worker.BlobUpdates): at its start and after each update it
// reads every blob placed for it through its link (a directory's
// data.txt for a blob unpacked) and logs what it read. It answers a
// connection on its slot port (--port) with one line of what it read
// last:
//
//	blobworker wordcount-1-1700000000 updates=2 dict=1/first-dict words.txt=2/second-words
//
// its topology, the number of updates it took up, then each local name with the version
// and the content it read (its first 32 bytes, and its size when longer). The integration tests run it.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nimbusha/nimbus/worker"
	"github.com/nimbusha/nimbus/workerproto"
)

func main() {
	port := flag.Int("port", 0, "the slot port to answer on")
	flag.Parse()
	worker.Main(worker.Config{}, func(ctx context.Context, w *worker.Worker) error {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*port)))
		if err != nil {
			return err
		}
		defer ln.Close()
		var mu sync.Mutex
		last := "blobworker " + w.TopologyID() + " updates=0\n"
		go serve(ln, func() string { mu.Lock(); defer mu.Unlock(); return last })
		log := w.Logger("blobworker")
		for updates := 1; ; updates++ {
			var u worker.BlobUpdate
			select {
			case <-ctx.Done():
				return nil
			case u = <-w.BlobUpdates():
			}
			line := describe(w, u.Blobs, updates)
			log.Info("blobs updated", "changed", u.Changed, "read", strings.TrimSpace(line))
			mu.Lock()
			last = line
			mu.Unlock()
		}
	})
}

// maxShown is how much of a blob's content the answer shows.
const maxShown = 32

// describe reads each blob through its link: its content, or its
// data.txt when it is a directory.
func describe(w *worker.Worker, bs workerproto.Blobs, updates int) string {
	parts := []string{"blobworker", w.TopologyID(), "updates=" + strconv.Itoa(updates)}
	for _, b := range slices.SortedFunc(slices.Values(bs), func(a, b workerproto.Blob) int { return strings.Compare(a.LocalName, b.LocalName) }) {
		p := w.BlobPath(b.LocalName)
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			p = filepath.Join(p, "data.txt")
		}
		content, err := os.ReadFile(p)
		text := strings.TrimSpace(string(content))
		if len(text) > maxShown {
			text = fmt.Sprintf("%s...(%d_bytes)", text[:maxShown], len(content))
		}
		if err != nil {
			text = "error:" + err.Error()
		}
		parts = append(parts, fmt.Sprintf("%s=%d/%s", b.LocalName, b.Version, strings.ReplaceAll(text, " ", "_")))
	}
	return strings.Join(parts, " ") + "\n"
}

// serve answers each connection with answer() until ln closes.
func serve(ln net.Listener, answer func() string) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = conn.Write([]byte(answer()))
		conn.Close()
	}
}
