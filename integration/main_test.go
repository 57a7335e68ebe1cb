package integration

import (
	"testing"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

func TestMain(m *testing.M) { testcluster.Main(m) }
