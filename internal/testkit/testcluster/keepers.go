package testcluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nimbusha/nimbus/keeper"
)

// StopKeepers ends the workers that keepers left in the local directory
// of a supervisor (storm.local.dir) still hold, and waits for their ends:
// a stopped supervisor leaves its workers running for the next one to
// adopt, and a test leaves nothing running.
func StopKeepers(localDir string) {
	dir := filepath.Join(localDir, "supervisor", "keepers")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".sock") {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := keeper.Dial(ctx, filepath.Join(dir, e.Name()))
		cancel()
		if err != nil {
			continue // gone already
		}
		if conn.Stop(0) == nil {
			select {
			case _, ok := <-conn.Exits():
				if ok {
					_ = conn.Release()
				}
			case <-time.After(5 * time.Second):
			}
		}
		conn.Close()
	}
}
