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
	"github.com/nimbusha/nimbus/configs"
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
	maxBytes := s.config().NimbusMaxArtifactBytes // read once: a reload mid-upload changes nothing here
	if declared := spec.GetArtifactBytes(); declared > maxBytes {
		return "", nil, validate.Invalid("spec.artifact_bytes", "%d bytes, larger than %s (%d)", declared, configs.KeyNimbusMaxArtifactBytes, maxBytes)
	}
	done, err := s.admitUpload(spec.GetArtifactBytes(), int64(len(specData)))
	if err != nil {
		return "", nil, err
	}
	defer done()
	tmp, err := s.store.NewTemp()
	if err != nil {
		return "", nil, s.storeFailed(err)
	}
	artifact, err := s.receiveArtifactOf(stream, filepath.Join(tmp, codedistributor.ArtifactFile), spec.GetArtifactBytes(), maxBytes)
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
	return s.receiveArtifactOf(stream, path, 0, s.config().NimbusMaxArtifactBytes)
}

// receiveArtifactOf writes the artifact chunks to path, hashing as it goes,
// and checks the trailer and, if declared is not 0, that exactly declared
// bytes arrived (spec.artifact_bytes). Every failure of the stream is the
// client's, named by field; a failure to write is returned as it is.
func (s *service) receiveArtifactOf(stream nimbusv1.NimbusService_SubmitTopologyServer, path string, declared, maxBytes int64) (*clusterv1.CodeFile, error) {
	next := func() (uploadPart, error) {
		msg, err := stream.Recv()
		if err != nil {
			return uploadPart{}, err
		}
		switch part := msg.GetPart().(type) {
		case *nimbusv1.SubmitTopologyRequest_Chunk:
			return uploadPart{chunk: part.Chunk}, nil
		case *nimbusv1.SubmitTopologyRequest_Trailer:
			return uploadPart{trailer: part.Trailer}, nil
		}
		return uploadPart{}, validate.Invalid("spec", "sent twice, or an empty message, after the artifact started")
	}
	return receiveContent(next, path, contentRules{
		file: codedistributor.ArtifactFile, what: "artifact", max: maxBytes,
		maxKey: configs.KeyNimbusMaxArtifactBytes, declared: declared, declaredField: "spec.artifact_bytes",
	})
}

// uploadPart is one message of an upload after its opening one: a chunk,
// or the trailer.
type uploadPart struct {
	chunk   []byte
	trailer *nimbusv1.ArtifactTrailer
}

// contentRules say what an upload's content may be.
type contentRules struct {
	file          string // its name in the bundle
	what          string // the field a size error names: "artifact", "blob"
	max           int64  // bytes at most, the value of maxKey
	maxKey        string
	declared      int64 // exact size, if not 0, as declaredField said
	declaredField string
	allowEmpty    bool
}

// receiveContent writes an upload's chunks (from next, which returns
// io.EOF at the stream's end) to path, hashing as it goes, and checks the
// size rules and the trailer.
func receiveContent(next func() (uploadPart, error), path string, r contentRules) (*clusterv1.CodeFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	var size int64
	for {
		part, err := next()
		if errors.Is(err, io.EOF) {
			return nil, validate.Invalid("trailer", "the stream ended after %d %s bytes without the trailer", size, r.what)
		}
		if err != nil {
			return nil, err // the client went away (status from the transport), or a misplaced message
		}
		if part.trailer == nil {
			if len(part.chunk) > maxChunk {
				return nil, validate.Invalid("chunk", "%d bytes; chunks are at most %d", len(part.chunk), maxChunk)
			}
			if size += int64(len(part.chunk)); size > r.max {
				return nil, validate.Invalid(r.what, "larger than %s (%d)", r.maxKey, r.max)
			}
			if r.declared > 0 && size > r.declared {
				return nil, validate.Invalid(r.what, "more than the %d bytes %s declared", r.declared, r.declaredField)
			}
			h.Write(part.chunk)
			if _, err := f.Write(part.chunk); err != nil {
				return nil, err
			}
			continue
		}
		sum := h.Sum(nil)
		if want := part.trailer.GetSha256(); !bytes.Equal(sum, want) {
			return nil, validate.Invalid("trailer.sha256", "the %s received (%d bytes) has SHA-256 %s, the trailer says %s",
				r.what, size, codedistributor.Hex(sum), codedistributor.Hex(want))
		}
		if size == 0 && !r.allowEmpty {
			return nil, validate.Invalid(r.what, "empty")
		}
		if r.declared > 0 && size != r.declared {
			return nil, validate.Invalid(r.declaredField, "declared %d bytes, but %d arrived", r.declared, size)
		}
		return &clusterv1.CodeFile{Name: r.file, Size: size, Sha256: sum}, f.Close()
	}
}
