package nimbus

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/apistatus"
	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/configs"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// Run longer with: go test ./nimbus -run '^$' -fuzz '^FuzzReceiveArtifact$'

// checkArtifactError fails t unless err is a validation error for one of
// the submission's fields, which reaches the client as InvalidArgument.
func checkArtifactError(t *testing.T, err error) {
	t.Helper()
	var ve *validate.Error
	if !errors.As(err, &ve) {
		t.Fatalf("want a *validate.Error, got %v (%T)", err, err)
	}
	switch root, _, _ := strings.Cut(ve.Field, "."); root {
	case "trailer", "chunk", "artifact", "spec":
	default:
		t.Fatalf("error %q names field %q, not one of the artifact's", err, ve.Field)
	}
	if code := status.Code(apistatus.ToStatus(err)); code != codes.InvalidArgument {
		t.Fatalf("%v answers %v, want InvalidArgument", err, code)
	}
}

// submitStream feeds receiveArtifact a fixed list of messages, then EOF.
type submitStream struct {
	grpc.ServerStream
	msgs []*nimbusv1.SubmitTopologyRequest
}

func (s *submitStream) Recv() (*nimbusv1.SubmitTopologyRequest, error) {
	if len(s.msgs) == 0 {
		return nil, io.EOF
	}
	m := s.msgs[0]
	s.msgs = s.msgs[1:]
	return m, nil
}

func (s *submitStream) SendAndClose(*nimbusv1.SubmitTopologyResponse) error { return nil }

// fuzzArtifactLimit is nimbus.max.artifact.bytes for FuzzReceiveArtifact:
// small, so that the limit is reached.
const fuzzArtifactLimit = 4096

// encodeStream writes messages as length-delimited records, the input
// format of FuzzReceiveArtifact.
func encodeStream(msgs ...*nimbusv1.SubmitTopologyRequest) []byte {
	var b []byte
	for _, m := range msgs {
		data, err := proto.Marshal(m)
		if err != nil {
			panic(err)
		}
		b = protowire.AppendBytes(b, data)
	}
	return b
}

func artifactChunk(b string) *nimbusv1.SubmitTopologyRequest {
	return &nimbusv1.SubmitTopologyRequest{Part: &nimbusv1.SubmitTopologyRequest_Chunk{Chunk: []byte(b)}}
}

func artifactTrailer(sum []byte) *nimbusv1.SubmitTopologyRequest {
	return &nimbusv1.SubmitTopologyRequest{Part: &nimbusv1.SubmitTopologyRequest_Trailer{
		Trailer: &nimbusv1.ArtifactTrailer{Sha256: sum}}}
}

func sha(b string) []byte {
	s := sha256.Sum256([]byte(b))
	return s[:]
}

// FuzzReceiveArtifact drives the artifact part of SubmitTopology (after
// the spec): chunks, then a trailer with the SHA-256 of their bytes.
func FuzzReceiveArtifact(f *testing.F) {
	spec := &nimbusv1.SubmitTopologyRequest{Part: &nimbusv1.SubmitTopologyRequest_Spec{Spec: &nimbusv1.TopologySpec{Name: "wc", NumWorkers: 1}}}
	big := strings.Repeat("j", fuzzArtifactLimit)
	for _, s := range [][]*nimbusv1.SubmitTopologyRequest{
		{artifactChunk("PK\x03\x04jar"), artifactTrailer(sha("PK\x03\x04jar"))},
		{artifactChunk("ab"), artifactChunk("cd"), artifactChunk(""), artifactTrailer(sha("abcd"))},
		{artifactChunk(big), artifactTrailer(sha(big))},
		{artifactChunk(big), artifactChunk("x"), artifactTrailer(sha(big + "x"))},
		{artifactChunk("ab"), artifactTrailer(sha("abc"))},
		{artifactChunk("ab"), artifactTrailer(nil)},
		{artifactTrailer(sha(""))},
		{artifactChunk("ab")},
		{artifactChunk("ab"), spec},
		{artifactChunk("ab"), {}},
		{},
	} {
		f.Add(encodeStream(s...))
	}
	f.Add([]byte{0x05, 0x1a, 0x03})

	cfg := &configs.Config{NimbusMaxArtifactBytes: fuzzArtifactLimit}
	f.Fuzz(func(t *testing.T, data []byte) {
		var msgs []*nimbusv1.SubmitTopologyRequest
		for len(data) > 0 {
			b, n := protowire.ConsumeBytes(data)
			if n < 0 {
				break // the stream ends here
			}
			data = data[n:]
			m := new(nimbusv1.SubmitTopologyRequest)
			if proto.Unmarshal(b, m) != nil {
				return // the gRPC server would not decode it either
			}
			msgs = append(msgs, m)
		}
		var sent bytes.Buffer
		var trailerAt = -1
		for i, m := range msgs {
			if m.GetTrailer() != nil || m.GetPart() == nil || m.GetSpec() != nil {
				if m.GetTrailer() != nil {
					trailerAt = i
				}
				break
			}
			sent.Write(m.GetChunk())
		}

		path := filepath.Join(t.TempDir(), codedistributor.ArtifactFile)
		s := &service{cfg: cfg}
		file, err := s.receiveArtifact(&submitStream{msgs: msgs}, path)
		if err != nil {
			checkArtifactError(t, err)
			return
		}
		got, rerr := os.ReadFile(path)
		if rerr != nil {
			t.Fatal(rerr)
		}
		want := sha256.Sum256(sent.Bytes())
		switch {
		case trailerAt < 0:
			t.Fatalf("accepted an artifact without a trailer")
		case !bytes.Equal(got, sent.Bytes()):
			t.Fatalf("stored %d bytes, the chunks before the trailer hold %d", len(got), sent.Len())
		case len(got) == 0 || int64(len(got)) > cfg.NimbusMaxArtifactBytes:
			t.Fatalf("accepted an artifact of %d bytes", len(got))
		case file.GetName() != codedistributor.ArtifactFile || file.GetSize() != int64(len(got)) ||
			!bytes.Equal(file.GetSha256(), want[:]) || !bytes.Equal(msgs[trailerAt].GetTrailer().GetSha256(), want[:]):
			t.Fatalf("CodeFile %v does not describe the %d bytes received", file, len(got))
		}
	})
}
