package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/internal/testkit/fakenimbus"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// blobLeader serves a fake leader whose blob RPCs answer from an
// in-memory store owned by alice.
func blobLeader(t *testing.T) (string, *fakenimbus.Server, *fakenimbus.Blobs) {
	t.Helper()
	f := &fakenimbus.Server{}
	blobs := &fakenimbus.Blobs{Owner: "alice"}
	blobs.Serve(f)
	return serveLeader(t, f), f, blobs
}

// runStdin runs a command line with stdin.
func runStdin(stdin io.Reader, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = execute(args, &globals{stdin: stdin, stdout: &out, stderr: &errOut, terminal: isTerminal, now: time.Now})
	return code, out.String(), errOut.String()
}

func TestRunBlobstoreLifecycle(t *testing.T) {
	addr, f, blobs := blobLeader(t)
	path, content := writeArtifact(t, 3<<20+5)
	sum := sha256.Sum256(content)

	got := runOK(t, "--seeds", addr, "blobstore", "create", "-f", path, "-a", "u:alice:rwa,o::r--", "--replication-factor", "2", "words.txt")
	want := "" +
		"key:          words.txt\n" +
		"version:      1\n" +
		"size:         3145733\n" +
		"sha256:       " + hex.EncodeToString(sum[:]) + "\n" +
		"replication:  2/2\n" +
		"state:        ok\n" +
		"owner:        alice\n" +
		"acl:          u:alice:rwa,o::r--\n"
	if got != want {
		t.Errorf("create printed:\n%s\nwant:\n%s", got, want)
	}
	if stored, _ := blobs.Content("words.txt"); !bytes.Equal(stored, content) {
		t.Error("the leader does not hold the file's content")
	}
	factor := int32(2)
	size := int64(len(content))
	wantHeader := &nimbusv1.BlobHeader{Key: "words.txt", Acl: []string{"u:alice:rwa", "o::r--"}, ReplicationFactor: &factor, Size: &size}
	if h := f.Requests("CreateBlob"); len(h) != 1 || !proto.Equal(h[0], wantHeader) {
		t.Errorf("header %v, want %v", h, wantHeader)
	}

	// update from stdin, then cat to stdout and to a file.
	code, stdout, stderr := runStdin(strings.NewReader("second version\n"), "--seeds", addr, "-o", "json", "blobstore", "update", "words.txt")
	if code != exitOK || stderr != "" {
		t.Fatalf("update: exit code %d, stderr %q", code, stderr)
	}
	var info nimbusv1.BlobInfo
	unmarshal(t, stdout, &info)
	if info.GetVersion() != 2 || info.GetSize() != 15 {
		t.Errorf("update answered %v, want version 2 of 15 bytes", &info)
	}
	if got := runOK(t, "--seeds", addr, "blobstore", "cat", "words.txt"); got != "second version\n" {
		t.Errorf("cat printed %q", got)
	}
	out := filepath.Join(t.TempDir(), "out.txt")
	if got := runOK(t, "--seeds", addr, "blobstore", "cat", "-f", out, "words.txt"); got != "" {
		t.Errorf("cat -f printed %q, want nothing", got)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "second version\n" {
		t.Errorf("cat -f wrote %q, %v", b, err)
	}

	// set-acl, replication, list, delete.
	runOK(t, "--seeds", addr, "blobstore", "set-acl", "-s", "u:alice:rwa,u:bob:r--", "words.txt")
	if got := runOK(t, "--seeds", addr, "blobstore", "set-acl", "words.txt"); !strings.Contains(got, "acl:          u:alice:rwa,u:bob:r--\n") {
		t.Errorf("set-acl without -s printed:\n%s", got)
	}
	runOK(t, "--seeds", addr, "blobstore", "replication", "--update", "--replication-factor", "4", "words.txt")
	if got := runOK(t, "--seeds", addr, "blobstore", "replication", "--read", "words.txt"); !strings.Contains(got, "replication:  4/4\n") {
		t.Errorf("replication --read printed:\n%s", got)
	}
	wantMeta := []proto.Message{
		&nimbusv1.SetBlobMetaRequest{Key: "words.txt", Acl: []string{"u:alice:rwa", "u:bob:r--"}, SetAcl: true},
		&nimbusv1.SetBlobMetaRequest{Key: "words.txt", ReplicationFactor: proto.Int32(4)},
	}
	if got := f.Requests("SetBlobMeta"); len(got) != 2 || !proto.Equal(got[0], wantMeta[0]) || !proto.Equal(got[1], wantMeta[1]) {
		t.Errorf("SetBlobMeta requests %v, want %v", got, wantMeta)
	}

	blobs.Put(&nimbusv1.BlobInfo{Key: "model", Owner: "bob", ReplicationFactor: 3, ReplicationCount: 1,
		State: "UNDER_REPLICATED", UsedBy: []string{"wordcount-1-1"}}, []byte("m"))
	want = "" +
		"KEY        VERSION  SIZE  REPLICATION  STATE             OWNER  ACL                    USED BY\n" +
		"model      1        1     1/3          under-replicated  bob    -                      wordcount-1-1\n" +
		"words.txt  2        15    4/4          ok                alice  u:alice:rwa,u:bob:r--  -\n"
	if got := runOK(t, "--seeds", addr, "blobstore", "list"); got != want {
		t.Errorf("list printed:\n%s\nwant:\n%s", got, want)
	}
	var list struct {
		Blobs []map[string]any `json:"blobs"`
	}
	if err := json.Unmarshal([]byte(runOK(t, "--seeds", addr, "-o", "json", "blobstore", "list", "model")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Blobs) != 1 || list.Blobs[0]["key"] != "model" {
		t.Errorf("list -o json model: %v", list)
	}

	line := runFails(t, exitWrongStatus, "--seeds", addr, "blobstore", "delete", "model")
	if !strings.Contains(line, "blobstore delete model: ") || !strings.Contains(line, "wordcount-1-1") {
		t.Errorf("delete of a used blob: %q, want the topology named", line)
	}
	if got := runOK(t, "--seeds", addr, "blobstore", "delete", "words.txt"); got != "deleted words.txt\n" {
		t.Errorf("delete printed %q", got)
	}
	runFails(t, exitNotFound, "--seeds", addr, "blobstore", "cat", "words.txt")
	runFails(t, exitNotFound, "--seeds", addr, "blobstore", "replication", "--read", "words.txt")
}

func TestRunBlobstoreCreateExistsAndCatLeavesTheFile(t *testing.T) {
	addr, _, blobs := blobLeader(t)
	blobs.Put(&nimbusv1.BlobInfo{Key: "k"}, []byte("old"))
	code, _, stderr := runStdin(strings.NewReader("new"), "--seeds", addr, "blobstore", "create", "k")
	if code != exitExists || !strings.HasPrefix(stderr, "stormctl: blobstore create k: ") {
		t.Errorf("create of a key that exists: exit code %d, stderr %q", code, stderr)
	}

	// A blob whose content is not its SHA-256: cat -f leaves FILE as it was
	// and no part file behind.
	blobs.Put(&nimbusv1.BlobInfo{Key: "bad", ContentSha256: make([]byte, 32)}, []byte("content"))
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if err := os.WriteFile(out, []byte("before"), 0o644); err != nil {
		t.Fatal(err)
	}
	line := runFails(t, exitError, "--seeds", addr, "blobstore", "cat", "-f", out, "bad")
	if !strings.Contains(line, "does not match") {
		t.Errorf("cat of a corrupt blob: %q", line)
	}
	if b, _ := os.ReadFile(out); string(b) != "before" {
		t.Errorf("cat -f of a corrupt blob left %q, want the file as it was", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("cat -f left %d files, want only out", len(entries))
	}
}

func TestRunBlobstoreUsageErrors(t *testing.T) {
	addr, f, _ := blobLeader(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"blobstore", "create"}, "create: missing KEY"},
		{[]string{"blobstore", "create", "a/b"}, "KEY: must be 1-200 bytes"},
		{[]string{"blobstore", "create", "-a", "u:bob:xyz", "k"}, `--acl "u:bob:xyz": `},
		{[]string{"blobstore", "create", "-a", ",", "k"}, `--acl ",": want at least one entry`},
		{[]string{"blobstore", "create", "--replication-factor", "0", "k"}, "--replication-factor 0: want a whole number from 1"},
		{[]string{"blobstore", "create", "-f", "/nonexistent/file", "k"}, "blobstore create k: file: open /nonexistent/file"},
		{[]string{"blobstore", "set-acl", "-s", "x", "k"}, `--set "x": `},
		{[]string{"blobstore", "replication", "k"}, "give one of --read and --update"},
		{[]string{"blobstore", "replication", "--read", "--update", "k"}, "give one of --read and --update"},
		{[]string{"blobstore", "replication", "--update", "k"}, "missing --replication-factor N"},
		{[]string{"blobstore", "replication", "--read", "-r", "2", "k"}, "--replication-factor is for --update"},
		{[]string{"blobstore", "list", ".."}, "KEY: must be"},
		{[]string{"blobstore"}, "blobstore: missing command"},
	} {
		code := exitUsage
		if strings.HasPrefix(tc.want, "blobstore create k: file") {
			code = exitError
		}
		line := runFails(t, code, append([]string{"--seeds", addr}, tc.args...)...)
		if !strings.Contains(line, tc.want) {
			t.Errorf("%q: %q, want %q in it", tc.args, line, tc.want)
		}
	}
	if reqs := f.Requests(); len(reqs) != 0 {
		t.Errorf("bad command lines sent %d requests, want none", len(reqs))
	}
}

func TestRunBlobstoreProgress(t *testing.T) {
	addr, _, blobs := blobLeader(t)
	big, content := writeArtifact(t, 5<<20+1)
	code, _, stderr := runTerminal("--seeds", addr, "blobstore", "create", "-f", big, "big")
	if code != exitOK {
		t.Fatalf("exit code %d, stderr %q", code, stderr)
	}
	if !strings.HasPrefix(stderr, "\ruploading [") || !strings.HasSuffix(stderr, "] 100% 5.0/5.0 MiB\n") {
		t.Errorf("stderr %q, want a bar that ends at 100%% and a newline", stderr)
	}
	if stored, _ := blobs.Content("big"); !bytes.Equal(stored, content) {
		t.Error("the leader does not hold the file")
	}
	// No bar when the size is unknown (stdin).
	code, _, stderr = runStdin(bytes.NewReader(content), "--seeds", addr, "blobstore", "update", "big")
	if code != exitOK || stderr != "" {
		t.Errorf("update from stdin: exit code %d, stderr %q", code, stderr)
	}
}

func TestBlobstoreHelpNamesStormsFlags(t *testing.T) {
	for cmd, flags := range map[string][]string{
		"create":      {"-f, --file", "-a, --acl", "-r, --replication-factor"},
		"update":      {"-f, --file"},
		"cat":         {"-f, --file"},
		"set-acl":     {"-s, --set"},
		"replication": {"--read", "--update", "--replication-factor"},
	} {
		help := runOK(t, "blobstore", cmd, "--help")
		for _, f := range flags {
			if !strings.Contains(help, f) {
				t.Errorf("blobstore %s --help lacks %s:\n%s", cmd, f, help)
			}
		}
	}
}
