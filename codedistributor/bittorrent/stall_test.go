package bittorrent_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anacrolix/torrent/metainfo"
	pp "github.com/anacrolix/torrent/peer_protocol"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor/bittorrent"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/conformance"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

// A download connected to a seed that sends nothing closes the connection
// and dials the seed again, well before it gives up: that is how it gets
// out of a connection the library left with no request in flight.
func TestStalledDownloadReconnects(t *testing.T) {
	e := conformance.NewEnv(t, bittorrent.Name, func(cfg *configs.Config) { cfg.BittorrentPort = 0 })
	a, b := e.Node(), e.Node()
	code, _ := e.Publish(a, "silent-1-1", 300<<10)
	// The real seed leaves; a silent one takes its place in the swarm.
	if err := a.Store.Remove(code.TopologyID); err != nil {
		t.Fatal(err)
	}
	swarm := e.Session.Paths().Swarm(code.TopologyID)
	testcluster.WaitFor(t, 10*time.Second, "the real seed leaves the swarm", func() error {
		if m, _, err := e.Session.Conn().Children(swarm); err != nil || len(m) != 0 {
			return fmt.Errorf("members %v (%v)", m, err)
		}
		return nil
	})
	seed := startSilentSeed(t, numPieces(t, code.Meta.GetBackendMeta()))
	ctx, leave := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer leave()
	wg.Go(func() { cluster.KeepEphemeral(ctx, e.Session, swarm+"/"+seed.addr, nil, slog.Default(), nil) })

	done := make(chan error, 1)
	wg.Go(func() { done <- b.Dist.Download(ctx, t.TempDir(), code) })
	testcluster.WaitFor(t, 30*time.Second, "the downloader to close the silent connection and dial again", func() error {
		if closed, accepted := seed.closed.Load(), seed.accepted.Load(); closed < 1 || accepted < 2 {
			return fmt.Errorf("%d connections accepted, %d closed by the downloader", accepted, closed)
		}
		return nil
	})
	select {
	case err := <-done:
		t.Fatalf("download ended before it was stopped: %v", err)
	default:
	}
	leave()
	if err := <-done; err == nil {
		t.Fatal("download from a silent seed succeeded")
	}
}

// numPieces reads the piece count of the torrent in a meta's backend_meta.
func numPieces(t *testing.T, backendMeta []byte) int {
	mi, err := metainfo.Load(bytes.NewReader(backendMeta))
	if err != nil {
		t.Fatal(err)
	}
	info, err := mi.UnmarshalInfo()
	if err != nil {
		t.Fatal(err)
	}
	return info.NumPieces()
}

// silentSeed answers the handshake, says it has every piece, unchokes,
// and then sends nothing.
type silentSeed struct {
	addr     string
	accepted atomic.Int32
	closed   atomic.Int32 // by the downloader
}

func startSilentSeed(t *testing.T, pieces int) *silentSeed {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &silentSeed{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			wg.Go(func() {
				defer conn.Close()
				stop := context.AfterFunc(t.Context(), func() { conn.Close() })
				defer stop()
				if err := s.serve(conn, pieces); err != nil && t.Context().Err() == nil {
					t.Errorf("silent seed: %v", err)
				}
			})
		}
	})
	return s
}

// serve plays a seed's part of the plaintext protocol until the
// downloader closes the connection.
func (s *silentSeed) serve(conn net.Conn, pieces int) error {
	const handshakeLen = 1 + 19 + 8 + 20 + 20 // length, protocol, reserved, infohash, peer id
	hs := make([]byte, handshakeLen)
	if _, err := io.ReadFull(conn, hs); err != nil {
		return fmt.Errorf("read the handshake: %w", err)
	}
	if string(hs[:20]) != "\x13BitTorrent protocol" {
		return fmt.Errorf("not a plaintext handshake: %q", hs[:20])
	}
	reply := append([]byte{}, hs[:20]...)
	reply = append(reply, make([]byte, 8)...) // no extensions
	reply = append(reply, hs[28:48]...)       // the same infohash
	id := make([]byte, 20)
	rand.Read(id)
	reply = append(reply, id...)
	have := make([]bool, pieces)
	for i := range have {
		have[i] = true
	}
	for _, m := range []pp.Message{{Type: pp.Bitfield, Bitfield: have}, {Type: pp.Unchoke}} {
		reply = append(reply, m.MustMarshalBinary()...)
	}
	if _, err := conn.Write(reply); err != nil {
		return fmt.Errorf("answer the handshake: %w", err)
	}
	// Requests come and are never served, until the downloader closes
	// the connection (or resets it).
	io.Copy(io.Discard, conn)
	s.closed.Add(1)
	return nil
}
