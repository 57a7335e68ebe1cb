package backends_test

import (
	"strings"
	"testing"

	"github.com/nimbusha/nimbus/codedistributor"
	_ "github.com/nimbusha/nimbus/codedistributor/backends"
	"github.com/nimbusha/nimbus/configs"
)

// Every backend is registered once this package is imported, and a class
// that names none is refused with the key and the ones there are.
func TestEveryBackendIsRegistered(t *testing.T) {
	for _, name := range []string{configs.DefaultCodeDistributorClass, "hdfs", "bittorrent"} {
		if err := codedistributor.CheckClass(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	err := codedistributor.CheckClass("s3")
	if err == nil || !strings.Contains(err.Error(), configs.KeyCodeDistributorClass) ||
		!strings.Contains(err.Error(), "bittorrent, hdfs, localfs") {
		t.Fatalf("class s3: %v, want an error naming %s and the registered backends", err, configs.KeyCodeDistributorClass)
	}
}
