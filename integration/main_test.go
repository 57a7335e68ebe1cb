package integration

import (
	"testing"

	"github.com/nimbusha/nimbus/internal/testcluster"
)

func TestMain(m *testing.M) { testcluster.Main(m) }
