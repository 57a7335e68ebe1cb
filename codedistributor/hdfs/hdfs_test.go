package hdfs_test

import (
	"testing"

	"github.com/nimbusha/nimbus/codedistributor/hdfs"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/conformance"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

func TestConformance(t *testing.T) {
	h := testcluster.StartHDFS(t) // one real HDFS for every case
	conformance.Run(t, hdfs.Name, func(cfg *configs.Config) {
		cfg.HDFSNamenodeAddresses = []string{h.Addr()}
		cfg.HDFSUser = "nimbus"
		cfg.HDFSStormDir = "/storm/" + t.Name()
	})
}
