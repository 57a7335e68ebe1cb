package nimbus

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// maxChunk is the largest artifact chunk a client may send.
const maxChunk = 1 << 20

// receiveSpec reads and validates the spec, the stream's first message.
func receiveSpec(stream nimbusv1.NimbusService_SubmitTopologyServer) (*nimbusv1.TopologySpec, error) {
	first, err := stream.Recv()
	if errors.Is(err, io.EOF) {
		return nil, validate.Invalid("spec", "the stream ended before the spec")
	}
	if err != nil {
		return nil, err
	}
	spec := first.GetSpec()
	if spec == nil {
		return nil, validate.Invalid("spec", "the first message must be the spec")
	}
	if err := validate.Spec(spec); err != nil {
		return nil, err
	}
	// The conf's topology.workers gives the count when num_workers is 0;
	// the stored spec and the StormBase carry it from here.
	spec.NumWorkers = validate.NumWorkers(spec)
	return spec, nil
}

// receiveBundle writes the bundle into a new temporary directory of the
// store, which the caller removes: the artifact as it streams in, checked
// against the trailer, and the spec. It returns the directory and the
// bundle's files, the artifact first. It reads no chunk until admitUpload
// lets the upload in, and frees the upload's slot when it returns.
func (s *service) receiveBundle(stream nimbusv1.NimbusService_SubmitTopologyServer, spec *nimbusv1.TopologySpec) (string, []*clusterv1.CodeFile, error) {
	specData := cluster.Encode(spec)
	done, err := s.admitUpload(spec.GetArtifactBytes(), int64(len(specData)))
	if err != nil {
		return "", nil, err
	}
	defer done()
	tmp, err := s.store.NewTemp()
	if err != nil {
		return "", nil, s.storeFailed(err)
	}
	artifact, err := s.receiveArtifactOf(stream, filepath.Join(tmp, codedistributor.ArtifactFile), spec.GetArtifactBytes())
	if err != nil {
		os.RemoveAll(tmp)
		return "", nil, s.storeFailed(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, codedistributor.SpecFile), specData, 0o644); err != nil {
		os.RemoveAll(tmp)
		return "", nil, s.storeFailed(err)
	}
	specSum := sha256.Sum256(specData)
	return tmp, []*clusterv1.CodeFile{artifact,
		{Name: codedistributor.SpecFile, Size: int64(len(specData)), Sha256: specSum[:]}}, nil
}

// receiveArtifact is receiveArtifactOf an artifact whose size was not
// declared.
func (s *service) receiveArtifact(stream nimbusv1.NimbusService_SubmitTopologyServer, path string) (*clusterv1.CodeFile, error) {
	return s.receiveArtifactOf(stream, path, 0)
}

// receiveArtifactOf writes the artifact chunks to path, hashing as it goes,
// and checks the trailer and, if declared is not 0, that exactly declared
// bytes arrived (spec.artifact_bytes). Every failure of the stream is the
// client's, named by field; a failure to write is returned as it is.
func (s *service) receiveArtifactOf(stream nimbusv1.NimbusService_SubmitTopologyServer, path string, declared int64) (*clusterv1.CodeFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	var size int64
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil, validate.Invalid("trailer", "the stream ended after %d artifact bytes without the trailer", size)
		}
		if err != nil {
			return nil, err // the client went away: status from the transport
		}
		switch part := msg.GetPart().(type) {
		case *nimbusv1.SubmitTopologyRequest_Chunk:
			if len(part.Chunk) > maxChunk {
				return nil, validate.Invalid("chunk", "%d bytes; chunks are at most %d", len(part.Chunk), maxChunk)
			}
			if size += int64(len(part.Chunk)); size > s.cfg.NimbusMaxArtifactBytes {
				return nil, validate.Invalid("artifact", "larger than nimbus.max.artifact.bytes (%d)", s.cfg.NimbusMaxArtifactBytes)
			}
			if declared > 0 && size > declared {
				return nil, validate.Invalid("artifact", "more than the %d bytes spec.artifact_bytes declared", declared)
			}
			h.Write(part.Chunk)
			if _, err := f.Write(part.Chunk); err != nil {
				return nil, err
			}
		case *nimbusv1.SubmitTopologyRequest_Trailer:
			sum := h.Sum(nil)
			if want := part.Trailer.GetSha256(); !bytes.Equal(sum, want) {
				return nil, validate.Invalid("trailer.sha256", "the artifact received (%d bytes) has SHA-256 %s, the trailer says %s",
					size, codedistributor.Hex(sum), codedistributor.Hex(want))
			}
			if size == 0 {
				return nil, validate.Invalid("artifact", "empty")
			}
			if declared > 0 && size != declared {
				return nil, validate.Invalid("spec.artifact_bytes", "declared %d bytes, but %d arrived", declared, size)
			}
			return &clusterv1.CodeFile{Name: codedistributor.ArtifactFile, Size: size, Sha256: sum}, f.Close()
		default:
			return nil, validate.Invalid("spec", "sent twice, or an empty message, after the artifact started")
		}
	}
}
