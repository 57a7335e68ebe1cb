package validate

import (
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/codedistributor"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// Fuzz targets for the validation of every request but the spec (see
// fuzz_test.go for those): the unary requests, the CodeService requests,
// and the string-level rules (the artifact part of a submission is
// package nimbus's FuzzReceiveArtifact). Run one for longer with:
// go test ./validate -run '^$' -fuzz '^FuzzValidateRequest$'

// maxValidationErrorLen bounds a validation error: values are shown
// truncated (showValue), so a huge request cannot make a huge error.
const maxValidationErrorLen = 1024

// checkValidationError fails t unless err is an *Error whose field is
// rooted at one of roots (the request's own field names), with a reason,
// bounded. (That every *Error becomes InvalidArgument naming its field is
// package apierr's test.)
func checkValidationError(t *testing.T, err error, roots ...string) *Error {
	t.Helper()
	var ve *Error
	if !errors.As(err, &ve) {
		t.Fatalf("want a *Error, got %v (%T)", err, err)
	}
	root := ve.Field
	if i := strings.IndexAny(root, ".["); i >= 0 {
		root = root[:i]
	}
	if !slices.Contains(roots, root) {
		t.Fatalf("error %q names field %q, want one under %q", err, ve.Field, roots)
	}
	if ve.Reason == "" {
		t.Fatalf("field %s: empty reason", ve.Field)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, ve.Field+": ") || len(msg) > maxValidationErrorLen || !utf8.ValidString(msg) {
		t.Fatalf("error (%d bytes) does not start with its field, is too long or is not UTF-8: %.200q", len(msg), msg)
	}
	return ve
}

// checkSafeElement fails t unless p is one plain path element: joined to a
// directory it names an entry of that directory.
func checkSafeElement(t *testing.T, what, p string) {
	t.Helper()
	if p == "" || strings.ContainsAny(p, `/\`) || strings.Contains(p, "..") && what != "file" ||
		!filepath.IsLocal(p) || filepath.Base(p) != p || filepath.Dir(filepath.Join("/code", p)) != "/code" {
		t.Fatalf("accepted %s %q is not one safe path element", what, p)
	}
}

// requestKind is one request type: how to make one, validate it, which
// fields an error may name, and what must hold when it is accepted.
type requestKind struct {
	name     string
	msg      func() proto.Message
	validate func(proto.Message) error
	fields   []string
	accepted func(*testing.T, proto.Message)
}

func checkName(t *testing.T, name string) {
	t.Helper()
	checkSafeElement(t, "name", name)
	if TopologyName("name", name) != nil {
		t.Fatalf("accepted name %q fails TopologyName", name)
	}
}

func checkWait(t *testing.T, w *int32) {
	t.Helper()
	if w != nil && (*w < 0 || *w > maxWaitSecs) {
		t.Fatalf("accepted wait_secs %d", *w)
	}
}

var requestKinds = []requestKind{
	{
		name:     "KillTopology",
		msg:      func() proto.Message { return new(nimbusv1.KillTopologyRequest) },
		validate: func(m proto.Message) error { return Kill(m.(*nimbusv1.KillTopologyRequest)) },
		fields:   []string{"name", "wait_secs"},
		accepted: func(t *testing.T, m proto.Message) {
			req := m.(*nimbusv1.KillTopologyRequest)
			checkName(t, req.GetName())
			checkWait(t, req.WaitSecs)
		},
	},
	{
		name:     "ActivateTopology",
		msg:      func() proto.Message { return new(nimbusv1.ActivateTopologyRequest) },
		validate: func(m proto.Message) error { return Activate(m.(*nimbusv1.ActivateTopologyRequest)) },
		fields:   []string{"name"},
		accepted: func(t *testing.T, m proto.Message) { checkName(t, m.(*nimbusv1.ActivateTopologyRequest).GetName()) },
	},
	{
		name:     "DeactivateTopology",
		msg:      func() proto.Message { return new(nimbusv1.DeactivateTopologyRequest) },
		validate: func(m proto.Message) error { return Deactivate(m.(*nimbusv1.DeactivateTopologyRequest)) },
		fields:   []string{"name"},
		accepted: func(t *testing.T, m proto.Message) { checkName(t, m.(*nimbusv1.DeactivateTopologyRequest).GetName()) },
	},
	{
		name:     "GetTopologyInfo",
		msg:      func() proto.Message { return new(nimbusv1.GetTopologyInfoRequest) },
		validate: func(m proto.Message) error { return GetTopologyInfo(m.(*nimbusv1.GetTopologyInfoRequest)) },
		fields:   []string{"name", "window"},
		accepted: func(t *testing.T, m proto.Message) { checkName(t, m.(*nimbusv1.GetTopologyInfoRequest).GetName()) },
	},
	{
		name:     "RebalanceTopology",
		msg:      func() proto.Message { return new(nimbusv1.RebalanceTopologyRequest) },
		validate: func(m proto.Message) error { return Rebalance(m.(*nimbusv1.RebalanceTopologyRequest)) },
		fields:   []string{"name", "wait_secs", "num_workers", "component_parallelism"},
		accepted: func(t *testing.T, m proto.Message) {
			req := m.(*nimbusv1.RebalanceTopologyRequest)
			checkName(t, req.GetName())
			checkWait(t, req.WaitSecs)
			if req.NumWorkers != nil && (*req.NumWorkers < 1 || *req.NumWorkers > maxNumWorkers) {
				t.Fatalf("accepted num_workers %d", *req.NumWorkers)
			}
			if n := len(req.GetComponentParallelism()); n > maxComponents {
				t.Fatalf("accepted %d component_parallelism entries", n)
			}
			for id, p := range req.GetComponentParallelism() {
				if componentIDProblem(id) != "" || p < 1 || p > maxParallelism {
					t.Fatalf("accepted component_parallelism[%q] = %d", id, p)
				}
			}
		},
	},
	{
		name: "GetCodeMeta",
		msg:  func() proto.Message { return new(nimbusv1.GetCodeMetaRequest) },
		validate: func(m proto.Message) error {
			return TopologyID("topology_id", m.(*nimbusv1.GetCodeMetaRequest).GetTopologyId())
		},
		fields: []string{"topology_id"},
		accepted: func(t *testing.T, m proto.Message) {
			checkTopologyID(t, m.(*nimbusv1.GetCodeMetaRequest).GetTopologyId())
		},
	},
	{
		// As CodeService.DownloadCode checks it.
		name: "DownloadCode",
		msg:  func() proto.Message { return new(nimbusv1.DownloadCodeRequest) },
		validate: func(m proto.Message) error {
			req := m.(*nimbusv1.DownloadCodeRequest)
			if err := TopologyID("topology_id", req.GetTopologyId()); err != nil {
				return err
			}
			return CodeFileName("file", req.GetFile())
		},
		fields: []string{"topology_id", "file"},
		accepted: func(t *testing.T, m proto.Message) {
			req := m.(*nimbusv1.DownloadCodeRequest)
			checkTopologyID(t, req.GetTopologyId())
			checkSafeElement(t, "file", req.GetFile())
		},
	},
	{
		// The first message of SubmitTopology, as submit checks it.
		name: "SubmitTopology",
		msg:  func() proto.Message { return new(nimbusv1.SubmitTopologyRequest) },
		validate: func(m proto.Message) error {
			spec := m.(*nimbusv1.SubmitTopologyRequest).GetSpec()
			if spec == nil {
				return Invalid("spec", "the first message must be the spec")
			}
			return Spec(spec)
		},
		fields: []string{"spec"},
		accepted: func(t *testing.T, m proto.Message) {
			checkName(t, m.(*nimbusv1.SubmitTopologyRequest).GetSpec().GetName())
		},
	},
	{
		name:     "GetClusterInfo",
		msg:      func() proto.Message { return new(nimbusv1.GetClusterInfoRequest) },
		validate: func(m proto.Message) error { return GetClusterInfo(m.(*nimbusv1.GetClusterInfoRequest)) },
		fields:   []string{"page_size", "topologies", "supervisors"},
		accepted: func(t *testing.T, m proto.Message) {
			req := m.(*nimbusv1.GetClusterInfoRequest)
			if req.GetPageSize() < 0 || len(req.GetTopologies()) > maxClusterFilters || len(req.GetSupervisors()) > maxClusterFilters {
				t.Fatalf("accepted page_size %d with %d topologies and %d supervisors", req.GetPageSize(), len(req.GetTopologies()), len(req.GetSupervisors()))
			}
			for _, name := range req.GetTopologies() {
				checkSafeElement(t, "topology filter", name)
			}
			for _, s := range req.GetSupervisors() {
				if s == "" || len(s) > maxSupervisorFilter || !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsSpace) {
					t.Fatalf("accepted supervisor filter %q", s)
				}
			}
		},
	},
	{
		// The header that opens CreateBlob, as writeBlob checks it.
		name:     "CreateBlob",
		msg:      func() proto.Message { return new(nimbusv1.CreateBlobRequest) },
		validate: func(m proto.Message) error { return BlobHeader(m.(*nimbusv1.CreateBlobRequest).GetHeader(), true) },
		fields:   []string{"header"},
		accepted: func(t *testing.T, m proto.Message) {
			h := m.(*nimbusv1.CreateBlobRequest).GetHeader()
			checkBlobKey(t, h.GetKey())
			if _, err := BlobACL("header.acl", h.GetAcl()); err != nil {
				t.Fatalf("accepted an ACL that does not parse: %v", err)
			}
		},
	},
	{
		name:     "UpdateBlob",
		msg:      func() proto.Message { return new(nimbusv1.UpdateBlobRequest) },
		validate: func(m proto.Message) error { return BlobHeader(m.(*nimbusv1.UpdateBlobRequest).GetHeader(), false) },
		fields:   []string{"header"},
		accepted: func(t *testing.T, m proto.Message) {
			h := m.(*nimbusv1.UpdateBlobRequest).GetHeader()
			checkBlobKey(t, h.GetKey())
			if len(h.GetAcl()) > 0 || h.ReplicationFactor != nil {
				t.Fatalf("an update accepted an ACL or a replication factor: %v", h)
			}
		},
	},
	{
		name:     "ReadBlob",
		msg:      func() proto.Message { return new(nimbusv1.ReadBlobRequest) },
		validate: func(m proto.Message) error { return ReadBlob(m.(*nimbusv1.ReadBlobRequest)) },
		fields:   []string{"key"},
		accepted: func(t *testing.T, m proto.Message) { checkBlobKey(t, m.(*nimbusv1.ReadBlobRequest).GetKey()) },
	},
	{
		name:     "DeleteBlob",
		msg:      func() proto.Message { return new(nimbusv1.DeleteBlobRequest) },
		validate: func(m proto.Message) error { return DeleteBlob(m.(*nimbusv1.DeleteBlobRequest)) },
		fields:   []string{"key"},
		accepted: func(t *testing.T, m proto.Message) { checkBlobKey(t, m.(*nimbusv1.DeleteBlobRequest).GetKey()) },
	},
	{
		name:     "ListBlobs",
		msg:      func() proto.Message { return new(nimbusv1.ListBlobsRequest) },
		validate: func(m proto.Message) error { return ListBlobs(m.(*nimbusv1.ListBlobsRequest)) },
		fields:   []string{"keys"},
		accepted: func(t *testing.T, m proto.Message) {
			for _, k := range m.(*nimbusv1.ListBlobsRequest).GetKeys() {
				checkBlobKey(t, k)
			}
		},
	},
	{
		name:     "SetBlobMeta",
		msg:      func() proto.Message { return new(nimbusv1.SetBlobMetaRequest) },
		validate: func(m proto.Message) error { return SetBlobMeta(m.(*nimbusv1.SetBlobMetaRequest)) },
		fields:   []string{"key", "acl", "replication_factor"},
		accepted: func(t *testing.T, m proto.Message) {
			req := m.(*nimbusv1.SetBlobMetaRequest)
			checkBlobKey(t, req.GetKey())
			if !req.GetSetAcl() && req.ReplicationFactor == nil {
				t.Fatalf("accepted a SetBlobMeta that changes nothing")
			}
			if r := req.ReplicationFactor; r != nil && (*r < 1 || *r > MaxBlobReplication) {
				t.Fatalf("accepted replication_factor %d", *r)
			}
		},
	},
}

// checkBlobKey checks an accepted blob key: one path element that is not
// . or .., and a ZooKeeper node name (no control character, no slash).
func checkBlobKey(t *testing.T, key string) {
	t.Helper()
	if key == "" || key == "." || key == ".." || strings.ContainsAny(key, "/\\\x00\t\n") ||
		!filepath.IsLocal(key) || filepath.Base(key) != key || len(key) > 255 {
		t.Fatalf("accepted blob key %q", key)
	}
}

// checkTopologyID checks an accepted topology id: one safe path element
// whose parts split back out and build the same id again (up to leading
// zeros in the numbers, which SplitTopologyID accepts).
func checkTopologyID(t *testing.T, id string) {
	t.Helper()
	checkSafeElement(t, "topology id", id)
	name, counter, secs, err := SplitTopologyID("topology_id", id)
	if err != nil {
		t.Fatalf("accepted id %q does not split: %v", id, err)
	}
	checkName(t, name)
	if counter < 0 || secs < 0 {
		t.Fatalf("id %q split into negative numbers %d, %d", id, counter, secs)
	}
	again := NewTopologyID(name, counter, time.Unix(secs, 0))
	n2, c2, s2, err := SplitTopologyID("topology_id", again)
	if err != nil || n2 != name || c2 != counter || s2 != secs {
		t.Fatalf("id %q splits into %q, %d, %d; rebuilt as %q it splits into %q, %d, %d (%v)",
			id, name, counter, secs, again, n2, c2, s2, err)
	}
	if canonicalID(id) != again {
		t.Fatalf("id %q rebuilds as %q", id, again)
	}
}

// canonicalID drops leading zeros from the two numbers of an id.
func canonicalID(id string) string {
	rest, secs, _ := cutLast(id, "-")
	name, counter, _ := cutLast(rest, "-")
	trim := func(s string) string {
		if s = strings.TrimLeft(s, "0"); s == "" {
			return "0"
		}
		return s
	}
	return name + "-" + trim(counter) + "-" + trim(secs)
}

func FuzzValidateRequest(f *testing.F) {
	i32 := func(v int32) *int32 { return &v }
	seeds := [][]proto.Message{
		{
			&nimbusv1.KillTopologyRequest{Name: "wordcount"},
			&nimbusv1.KillTopologyRequest{Name: "wordcount", WaitSecs: i32(30)},
			&nimbusv1.KillTopologyRequest{Name: "../x", WaitSecs: i32(-1)},
			&nimbusv1.KillTopologyRequest{Name: "wc", WaitSecs: i32(86401)},
		},
		{&nimbusv1.ActivateTopologyRequest{Name: "word-count_v1.2"}, &nimbusv1.ActivateTopologyRequest{Name: ".."}},
		{&nimbusv1.DeactivateTopologyRequest{Name: "wc"}, &nimbusv1.DeactivateTopologyRequest{Name: "a/b"}},
		{&nimbusv1.GetTopologyInfoRequest{Name: "wc"}, &nimbusv1.GetTopologyInfoRequest{Name: strings.Repeat("n", 129)}},
		{
			&nimbusv1.RebalanceTopologyRequest{Name: "wc", WaitSecs: i32(10), NumWorkers: i32(4),
				ComponentParallelism: map[string]int32{"split": 4, "count:v2": 8}},
			&nimbusv1.RebalanceTopologyRequest{Name: "wc", NumWorkers: i32(0)},
			&nimbusv1.RebalanceTopologyRequest{Name: "wc", ComponentParallelism: map[string]int32{"a/b": 1, "": 0, "x": 10001}},
		},
		{
			&nimbusv1.GetCodeMetaRequest{TopologyId: "wordcount-1-1400000000"},
			&nimbusv1.GetCodeMetaRequest{TopologyId: "x-0000000001-0"},
			&nimbusv1.GetCodeMetaRequest{TopologyId: "..-1-2"},
			&nimbusv1.GetCodeMetaRequest{TopologyId: "wc-+1-2"},
		},
		{
			&nimbusv1.DownloadCodeRequest{TopologyId: "wordcount-1-1400000000", File: codedistributor.ArtifactFile},
			&nimbusv1.DownloadCodeRequest{TopologyId: "wordcount-1-1400000000", File: "../meta.pb"},
			&nimbusv1.DownloadCodeRequest{TopologyId: "a/b-1-2", File: "artifact"},
		},
		{
			&nimbusv1.SubmitTopologyRequest{Part: &nimbusv1.SubmitTopologyRequest_Spec{Spec: validSpec()}},
			&nimbusv1.SubmitTopologyRequest{Part: &nimbusv1.SubmitTopologyRequest_Chunk{Chunk: []byte("jar")}},
			&nimbusv1.SubmitTopologyRequest{Part: &nimbusv1.SubmitTopologyRequest_Spec{Spec: &nimbusv1.TopologySpec{Name: "wc"}}},
		},
		{
			&nimbusv1.GetClusterInfoRequest{},
			&nimbusv1.GetClusterInfoRequest{Topologies: []string{"wc", "wc-1-1400000000"}, Supervisors: []string{"sup-1", "host.example"}, PageSize: 100},
			&nimbusv1.GetClusterInfoRequest{PageSize: -1},
			&nimbusv1.GetClusterInfoRequest{Topologies: []string{"../x"}, Supervisors: []string{"a b", ""}},
		},
		{
			&nimbusv1.CreateBlobRequest{Part: &nimbusv1.CreateBlobRequest_Header{Header: &nimbusv1.BlobHeader{Key: "dict.txt", Acl: []string{"u:alice:rwa", "o::r--"}, ReplicationFactor: i32(3)}}},
			&nimbusv1.CreateBlobRequest{Part: &nimbusv1.CreateBlobRequest_Header{Header: &nimbusv1.BlobHeader{Key: "a/b", Acl: []string{"x:y:z"}}}},
			&nimbusv1.CreateBlobRequest{Part: &nimbusv1.CreateBlobRequest_Chunk{Chunk: []byte("x")}},
		},
		{
			&nimbusv1.UpdateBlobRequest{Part: &nimbusv1.UpdateBlobRequest_Header{Header: &nimbusv1.BlobHeader{Key: "my model"}}},
			&nimbusv1.UpdateBlobRequest{Part: &nimbusv1.UpdateBlobRequest_Header{Header: &nimbusv1.BlobHeader{Key: "k", Acl: []string{"o::r"}}}},
		},
		{&nimbusv1.ReadBlobRequest{Key: "dict"}, &nimbusv1.ReadBlobRequest{Key: ".."}},
		{&nimbusv1.DeleteBlobRequest{Key: "dict"}, &nimbusv1.DeleteBlobRequest{Key: "a\tb"}},
		{&nimbusv1.ListBlobsRequest{}, &nimbusv1.ListBlobsRequest{Keys: []string{"a", "meta.pb"}}},
		{
			&nimbusv1.SetBlobMetaRequest{Key: "dict", SetAcl: true, Acl: []string{"u:bob:r-a"}},
			&nimbusv1.SetBlobMetaRequest{Key: "dict", ReplicationFactor: i32(0)},
			&nimbusv1.SetBlobMetaRequest{Key: "dict"},
		},
	}
	for kind, msgs := range seeds {
		for _, m := range msgs {
			b, err := proto.Marshal(m)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(uint8(kind), b)
		}
		f.Add(uint8(kind), []byte{})
		f.Add(uint8(kind), []byte{0x0a, 0x02, '.', '.', 0x10, 0x01})
	}

	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		k := requestKinds[int(kind)%len(requestKinds)]
		req := k.msg()
		if proto.Unmarshal(data, req) != nil {
			return // the gRPC server would not decode it either
		}
		err := k.validate(req)
		if again := k.validate(req); errString(again) != errString(err) {
			t.Fatalf("%s: not deterministic: %v, then %v", k.name, err, again)
		}
		if err != nil {
			checkValidationError(t, err, k.fields...)
			return
		}
		k.accepted(t, req)
	})
}

func FuzzSplitTopologyID(f *testing.F) {
	for _, s := range []string{
		"wordcount-1-1400000000", "word-count-7-1400000000", "a-1-2-3", "a--1-2", "x-0000000001-0",
		"x-9223372036854775807-9223372036854775807", "x-00-000", "", "-", "--", "-1-2", "..-1-2", ".-1-2",
		"a/b-1-2", "wc--2", "wc-1-", "wc-+1-2", "wc-1-0x10", "wc-1-9223372036854775808", "wc-١-2",
		strings.Repeat("n", 128) + "-1-2", strings.Repeat("n", 129) + "-1-2",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _, _, err := SplitTopologyID("topology_id", s)
		if verr := TopologyID("topology_id", s); errString(verr) != errString(err) {
			t.Fatalf("TopologyID(%q) = %v, SplitTopologyID says %v", s, verr, err)
		}
		if err != nil {
			if ve := checkValidationError(t, err, "topology_id"); ve.Field != "topology_id" {
				t.Fatalf("error names %q", ve.Field)
			}
			return
		}
		checkTopologyID(t, s)
	})
}

// FuzzValidateStrings drives the string-level rules with any bytes (the
// proto decoder lets only valid UTF-8 through; these also see the rest).
func FuzzValidateStrings(f *testing.F) {
	for _, s := range []string{
		"wordcount", "word-count_v1.2", "count:v2", "stormjar.jar", ".hidden", "a..b", "Jürgen",
		"", ".", "..", "...", "../x", "a/b", `a\b`, "/", "a\x00b", "a b", "\x1b[31mroot", "a\u0085", "a\xffb",
		strings.Repeat("a", 63) + "ü" + strings.Repeat("b", 10), strings.Repeat("n", 129), strings.Repeat("f", 256),
		"{code_dir}/artifact", "--port={prot}", "${HOME}", "{{port}}", "{a {x}}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if err := TopologyName("spec.name", s); err != nil {
			checkValidationError(t, err, "spec")
		} else {
			checkName(t, s)
			if len(s) > maxTopologyNameLen || s == "." {
				t.Fatalf("accepted name %q", s)
			}
		}

		if reason := componentIDProblem(s); reason == "" {
			if s == "" || len(s) > maxComponentIDLen || strings.ContainsAny(s, "/\\\x00 ") {
				t.Fatalf("accepted component id %q", s)
			}
		} else if !utf8.ValidString(reason) || len(reason) > maxValidationErrorLen {
			t.Fatalf("component id reason is not UTF-8 or too long: %.200q", reason)
		}

		if err := CodeFileName("file", s); err != nil {
			checkValidationError(t, err, "file")
		} else {
			checkSafeElement(t, "file", s)
		}

		if err := checkOwner("spec.owner", s); err != nil {
			checkValidationError(t, err, "spec")
		} else if len(s) > maxOwnerLen || !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0 {
			t.Fatalf("accepted owner %q", s)
		}

		for _, config := range []map[string]string{{s: "v"}, {"k": s}} {
			if err := checkConfig(config); err != nil {
				checkValidationError(t, err, "spec")
			}
		}
		if err := WorkerCommand([]string{s}); err != nil {
			checkValidationError(t, err, "spec")
		} else if s == "" || strings.IndexByte(s, 0) >= 0 {
			t.Fatalf("accepted worker_command [%q]", s)
		} else {
			checkOnlyKnownPlaceholders(t, s)
		}

		// showValue quotes, stays short and valid UTF-8, and shows a
		// prefix of the value.
		shown := showValue(s)
		quoted, _, _ := strings.Cut(shown, "... (")
		prefix, err := strconv.Unquote(quoted)
		if err != nil || !strings.HasPrefix(s, prefix) || len(s) <= maxShownValueLen && prefix != s ||
			len(s) > maxShownValueLen && len(prefix) < maxShownValueLen-utf8.UTFMax {
			t.Fatalf("showValue(%q) = %s", s, shown)
		}
		if !utf8.ValidString(shown) || len(shown) > 4*maxShownValueLen+32 {
			t.Fatalf("showValue(%.100q) is %d bytes or not UTF-8", s, len(shown))
		}
	})
}
