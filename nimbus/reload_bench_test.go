package nimbus

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// BenchmarkConfigReload measures a reload end to end: from the file
// written to the new rule in force (the new admin's request allowed),
// fsnotify's event and the reloader's 100 ms settle included.
// Results: bench/RESULTS.md.
func BenchmarkConfigReload(b *testing.B) {
	f := startFromFile(b, "nimbus.grpc.port: 0\nnimbus.admins: [alice]\n")
	callers := map[string]nimbusv1.NimbusServiceClient{
		"alice": callerAs(b, f.s, f.issue("alice", false)), "bob": callerAs(b, f.s, f.issue("bob", false)),
	}
	admin := "alice"
	b.ResetTimer()
	for range b.N {
		if admin == "alice" {
			admin = "bob"
		} else {
			admin = "alice"
		}
		f.write("nimbus.grpc.port: 0\nnimbus.admins: [" + admin + "]\n")
		deadline := time.Now().Add(10 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := callers[admin].GetNimbusConfig(ctx, &nimbusv1.GetNimbusConfigRequest{})
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s not an admin 10 s after the file named it: %v", admin, err)
			}
		}
	}
}

// reloadEvery is how often BenchmarkReadsWithReload changes the file:
// far more often than any operator, so that calls meet many swaps.
const reloadEvery = 20 * time.Millisecond

// BenchmarkReadsWithReload measures GetLeader and GetClusterInfo from
// parallel callers with the file changed and reloaded every reloadEvery,
// and without: the policy is one atomic load per call, so both should
// match.
// Results: bench/RESULTS.md.
func BenchmarkReadsWithReload(b *testing.B) {
	f := startFromFile(b, "nimbus.grpc.port: 0\nnimbus.admins: [alice]\n")
	alice := callerAs(b, f.s, f.issue("alice", false))
	for deadline := time.Now().Add(20 * time.Second); ; { // GetLeader answers once a leader is elected
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := alice.GetLeader(ctx, &nimbusv1.GetLeaderRequest{})
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("no leader after 20 s: %v", err)
		}
	}
	for _, reload := range []bool{false, true} {
		for _, rpc := range []string{"GetLeader", "GetClusterInfo"} {
			b.Run(fmt.Sprintf("%s/reload=%v", rpc, reload), func(b *testing.B) {
				var reloads atomic.Int64
				stop := make(chan struct{})
				done := make(chan struct{})
				go func() { // rewrites the file every reloadEvery until the benchmark ends
					defer close(done)
					users := []string{"[alice]", "[alice, carol]"}
					tick := time.NewTicker(reloadEvery)
					defer tick.Stop()
					for i := 0; reload; i++ {
						select {
						case <-stop:
							return
						case <-tick.C:
						}
						f.write("nimbus.grpc.port: 0\nnimbus.admins: [alice]\nnimbus.users: " + users[i%2] + "\n")
						if _, err := f.s.Reloader().Reload(); err == nil {
							reloads.Add(1)
						}
					}
				}()
				b.SetParallelism(4)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
						var err error
						if rpc == "GetLeader" {
							_, err = alice.GetLeader(ctx, &nimbusv1.GetLeaderRequest{})
						} else {
							_, err = alice.GetClusterInfo(ctx, &nimbusv1.GetClusterInfoRequest{})
						}
						cancel()
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.StopTimer()
				close(stop)
				<-done
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
				b.ReportMetric(float64(reloads.Load()), "reloads")
			})
		}
	}
}
