package client

import (
	"testing"

	"github.com/nimbusha/nimbus/nimbus"
)

// The SDK does not import the daemon; this keeps the copied protocol
// constants from drifting.
func TestNotLeaderConstantsMatchTheServer(t *testing.T) {
	if errorDomain != nimbus.ErrorDomain || reasonNotLeader != nimbus.ReasonNotLeader || metadataLeaderKey != nimbus.MetadataLeaderKey {
		t.Fatalf("client (%s, %s, %s) and server (%s, %s, %s) disagree",
			errorDomain, reasonNotLeader, metadataLeaderKey, nimbus.ErrorDomain, nimbus.ReasonNotLeader, nimbus.MetadataLeaderKey)
	}
}
