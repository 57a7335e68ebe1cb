package localfs_test

import (
	"testing"

	"github.com/nimbusha/nimbus/codedistributor/localfs"
	"github.com/nimbusha/nimbus/internal/testkit/conformance"
)

func TestConformance(t *testing.T) { conformance.Run(t, localfs.Name, nil) }
