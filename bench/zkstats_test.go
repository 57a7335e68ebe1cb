package bench

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// zkConn is one client connection as ZooKeeper's `cons` command lists it.
type zkConn struct {
	sid    int64
	recved int64 // packets received, pings included
	lcxid  int64 // the last request's xid: requests sent, as pings and watch events have none
}

var consLine = regexp.MustCompile(`\((?:.*,)?recved=(\d+),.*sid=0x([0-9a-f]+),.*lcxid=0x([0-9a-f]+),`)

// parseCons reads `cons` output into connections by session id. Lines
// without a session (the `cons` connection itself) are skipped.
func parseCons(r io.Reader) (map[int64]zkConn, error) {
	out := map[int64]zkConn{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		m := consLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		recved, _ := strconv.ParseInt(m[1], 10, 64)
		sid, err := strconv.ParseUint(m[2], 16, 64)
		if err != nil {
			return nil, fmt.Errorf("cons: %q: %w", sc.Text(), err)
		}
		lcxid, err := strconv.ParseUint(m[3], 16, 64)
		if err != nil {
			return nil, fmt.Errorf("cons: %q: %w", sc.Text(), err)
		}
		out[int64(sid)] = zkConn{sid: int64(sid), recved: recved, lcxid: int64(lcxid)}
	}
	return out, sc.Err()
}

// cons asks the ZooKeeper server at addr for its client connections.
func cons(addr string) (map[int64]zkConn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, "cons"); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(c)
	if err != nil {
		return nil, err
	}
	return parseCons(strings.NewReader(string(data)))
}

// requests is how many requests the sessions sent between two `cons`
// readings, and how many packets (pings too) the server received.
func requests(before, after map[int64]zkConn, sids map[int64]bool) (reqs, packets int64) {
	for sid := range sids {
		a, b := after[sid], before[sid]
		reqs += a.lcxid - b.lcxid
		packets += a.recved - b.recved
	}
	return reqs, packets
}

func TestParseCons(t *testing.T) {
	const out = ` /127.0.0.1:51234[1](queued=0,recved=12,sent=13,sid=0x100009b9a8d0001,lop=SETD,est=1795400000000,to=10000,lcxid=0x1f,lzxid=0x2a,lresp=1795400000100,llat=0,minlat=0,avglat=0.4,maxlat=3)
 /127.0.0.1:51240[1](queued=0,recved=3,sent=3,sid=0x100009b9a8d0002,lop=PING,est=1795400000000,to=10000,lcxid=0x0,lzxid=0xffffffffffffffff,lresp=1795400000100,llat=0,minlat=0,avglat=0,maxlat=0)
 /127.0.0.1:51250[0](queued=0,recved=1,sent=0)

`
	got, err := parseCons(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]zkConn{
		0x100009b9a8d0001: {sid: 0x100009b9a8d0001, recved: 12, lcxid: 0x1f},
		0x100009b9a8d0002: {sid: 0x100009b9a8d0002, recved: 3, lcxid: 0},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	later := map[int64]zkConn{0x100009b9a8d0001: {recved: 20, lcxid: 0x25}, 0x100009b9a8d0002: {recved: 5, lcxid: 0}}
	if r, p := requests(got, later, map[int64]bool{0x100009b9a8d0001: true, 0x100009b9a8d0002: true}); r != 6 || p != 10 {
		t.Fatalf("requests %d, packets %d; want 6, 10", r, p)
	}
}
