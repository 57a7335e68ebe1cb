package localfs_test

import (
	"testing"

	"github.com/nimbusha/nimbus/codedistributor/conformance"
	"github.com/nimbusha/nimbus/codedistributor/localfs"
)

func TestConformance(t *testing.T) { conformance.Run(t, localfs.Name, nil) }
