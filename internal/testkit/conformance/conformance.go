package conformance

import (
	"testing"

	"github.com/nimbusha/nimbus/configs"
)

// Run runs the suite against backend; configure adjusts the configuration
// (addresses of the backend's own services, say).
func Run(t *testing.T, backend string, configure func(*configs.Config)) {
	s := suite{backend: backend, configure: configure}
	s.run(t, "UploadThenFetchOnAnotherNode", uploadThenFetchOnAnotherNode)
	s.run(t, "NoReplicaMeansNotHeld", noReplicaMeansNotHeld)
	s.run(t, "CorruptSourceIsDiscardedAndAnotherUsed", corruptSourceIsDiscardedAndAnotherUsed)
	s.run(t, "MetaMustMatchTheDigest", metaMustMatchTheDigest)
	s.run(t, "RecoveredFromASupervisor", recoveredFromASupervisor)
	s.run(t, "RecoveredPastStaleReplicas", recoveredPastStaleReplicas)
	s.run(t, "RecoveredFromAnySupervisor", recoveredFromAnySupervisor)
	s.run(t, "HeldNowhere", heldNowhere)
	s.run(t, "CleanupIsIdempotent", cleanupIsIdempotent)
	s.run(t, "BlobUploadThenFetchOnAnotherNode", blobUploadThenFetchOnAnotherNode)
	s.run(t, "BlobNewVersionReplacesTheOld", blobNewVersionReplacesTheOld)
	s.run(t, "BlobApartFromCode", blobApartFromCode)
	s.run(t, "CleanupBlobKeepsOnlyTheCurrentVersion", cleanupBlobKeepsOnlyTheCurrentVersion)
}

// A scenario is one case of the suite, run in an Env of its own.
type scenario func(t *testing.T, e *Env)

// suite gives every scenario a fresh Env, so that none sees another's
// nodes or ZooKeeper state.
type suite struct {
	backend   string
	configure func(*configs.Config)
}

func (s suite) run(t *testing.T, name string, sc scenario) {
	t.Run(name, func(t *testing.T) { sc(t, NewEnv(t, s.backend, s.configure)) })
}
