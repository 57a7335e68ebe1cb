package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

var submitTrials = flag.Int("submit-trials", 10, "submissions per size and replication setting")

// BenchmarkSubmit measures SubmitTopology's latency on 3 nimbuses for 1 MB
// and 50 MB artifacts with topology.min.replication.count 1 and 3, and the
// rate at which followers replicate a 50 MB artifact after a submit that
// did not wait for them (localfs: from the leader's CodeService).
func BenchmarkSubmit(b *testing.B) {
	z := testcluster.StartZooKeeper(b)
	benchSubmit(b, z.Addr(), "localfs", nil, []int{1 << 20, 50 << 20})
}

// BenchmarkSubmitHDFS is the 50 MB case through a real HDFS (one NameNode,
// one DataNode) beside localfs, in the same run.
func BenchmarkSubmitHDFS(b *testing.B) {
	z := testcluster.StartZooKeeper(b)
	h := testcluster.StartHDFS(b)
	benchSubmit(b, z.Addr(), "localfs", nil, []int{50 << 20})
	benchSubmit(b, z.Addr(), "hdfs", []string{
		"STORM_CODEDISTRIBUTOR_CLASS=hdfs", "STORM_HDFS_NAMENODE_ADDRESSES=" + h.Addr(),
		"STORM_HDFS_USER=nimbus", "STORM_HDFS_STORM_DIR=/storm/bench",
	}, []int{50 << 20})
}

func benchSubmit(b *testing.B, zkAddr, backend string, env []string, sizes []int) {
	for _, minRepl := range []int{1, 3} {
		c := testcluster.New(b, zkAddr, testcluster.WithRoot(fmt.Sprintf("/bench-submit-%s-%d", backend, minRepl)),
			testcluster.WithSessionTimeout(10*time.Second), testcluster.WithLogf(discard))
		var seeds []string
		for range 3 {
			p, err := c.StartNimbus(testcluster.WithEnv(env...), testcluster.WithArgs(
				"--topology.min.replication.count", fmt.Sprint(minRepl), "--nimbus.max.artifact.bytes", fmt.Sprint(64<<20)))
			if err != nil {
				b.Fatal(err)
			}
			seeds = append(seeds, p.Addr())
		}
		cl, err := client.New(seeds)
		if err != nil {
			b.Fatal(err)
		}
		sess, err := cluster.Connect(context.Background(), cluster.SessionConfig{Servers: []string{zkAddr},
			SessionTimeout: 10 * time.Second, Root: c.Root, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		for _, size := range sizes {
			b.Run(fmt.Sprintf("%s/%dMB/min%d", backend, size>>20, minRepl), func(b *testing.B) {
				data := make([]byte, size)
				rand.Read(data)
				var lat, repl []time.Duration
				for i := range *submitTrials {
					name := fmt.Sprintf("bench-%d-%d-%d", size>>20, minRepl, i)
					start := time.Now()
					resp, err := cl.SubmitTopology(context.Background(), &nimbusv1.TopologySpec{
						Name: name, NumWorkers: 1, Components: []*nimbusv1.ComponentSpec{{Id: "c", Parallelism: 1}},
						WorkerCommand: []string{"{code_dir}/artifact"},
					}, bytes.NewReader(data), int64(size), nil)
					if err != nil {
						b.Fatalf("%v\n%s", err, c.Logs(20))
					}
					lat = append(lat, time.Since(start))
					if minRepl == 1 && size == 50<<20 {
						info, err := cl.GetTopologyInfo(context.Background(), name)
						if err != nil {
							b.Fatal(err)
						}
						acked := time.Now()
						if err := awaitReplicas(sess, resp.GetTopologyId(), info.GetCodeMetaDigest(), 3); err != nil {
							b.Fatal(err)
						}
						repl = append(repl, time.Since(acked))
					}
					zero := int32(0)
					if err := cl.KillTopology(context.Background(), &nimbusv1.KillTopologyRequest{Name: name, WaitSecs: &zero}); err != nil {
						b.Fatal(err)
					}
				}
				p50, p99 := percentile(lat, 50), percentile(lat, 99)
				b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
				fmt.Fprintf(os.Stderr, "| %s: submit %d MB, min replication %d | %d | %v | %v |\n", backend, size>>20, minRepl, len(lat),
					p50.Round(time.Millisecond), p99.Round(time.Millisecond))
				if len(repl) > 0 {
					r50 := percentile(repl, 50)
					fmt.Fprintf(os.Stderr, "| %s: replication of 50 MB to 2 followers after a min-1 submit | %d | %v (%.0f MB/s per follower) | %v |\n",
						backend, len(repl), r50.Round(time.Millisecond), 50/r50.Seconds(), percentile(repl, 99).Round(time.Millisecond))
				}
			})
		}
		sess.Close()
		cl.Close()
		c.Close()
	}
}

// awaitReplicas waits, by a watch on the replica list, until n replicas of
// topology id hold digest (the nimbuses' caches see them a watch later).
func awaitReplicas(sess *cluster.Session, id string, digest []byte, n int) error {
	for {
		_, _, watch, err := sess.Conn().ChildrenW(sess.Paths().Distribution(id))
		if err != nil {
			return err
		}
		replicas, err := sess.Read().Replicas(id)
		if err != nil {
			return err
		}
		if cluster.CountHolding(replicas, digest) >= n {
			return nil
		}
		<-watch
	}
}
