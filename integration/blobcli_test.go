package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

// TestStormctlBlobstoreAgainstARealCluster runs every blobstore command
// of the real stormctl binary against two real nimbuses: the content
// read back is the content stored, each version is acknowledged
// replicated, and bad input is refused with its exit code and no change.
func TestStormctlBlobstoreAgainstARealCluster(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	ps := c.StartNimbuses(t, 2)
	c.WaitLeader(t, ps, 10*time.Second)
	seeds := ps[0].Addr() + "," + ps[1].Addr()
	blob := func(stdin io.Reader, args ...string) (string, string, int) {
		return stormctlIn(t, stdin, append([]string{"--seeds", seeds, "--timeout", "60s", "blobstore"}, args...)...)
	}
	v1 := randomBytes(t, 3<<20+7) // four chunks
	file := filepath.Join(t.TempDir(), "words.bin")
	if err := os.WriteFile(file, v1, 0o644); err != nil {
		t.Fatal(err)
	}

	// create from a file, acknowledged once both nimbuses hold it.
	out, errOut, code := blob(nil, "create", "-f", file, "-a", "o::rwa", "--replication-factor", "2", "words")
	if code != 0 || !strings.Contains(out, "version:      1\n") || !strings.Contains(out, "replication:  2/2\n") {
		t.Fatalf("create: exit %d\n%s%s", code, out, errOut)
	}
	if out, _, code := blob(nil, "cat", "words"); code != 0 || out != string(v1) {
		t.Fatalf("cat: exit %d, %d bytes, want the %d created", code, len(out), len(v1))
	}

	// update from stdin; cat -f writes the new version.
	v2 := []byte("the second version\n")
	out, errOut, code = blob(bytes.NewReader(v2), "-o", "json", "update", "words")
	var info struct {
		Version          int64 `json:"version"`
		Size             int64 `json:"size"`
		ReplicationCount int32 `json:"replicationCount"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &info) != nil || info.Version != 2 || info.Size != int64(len(v2)) || info.ReplicationCount != 2 {
		t.Fatalf("update: exit %d, %+v\n%s%s", code, info, out, errOut)
	}
	got := filepath.Join(t.TempDir(), "got")
	if _, errOut, code := blob(nil, "cat", "-f", got, "words"); code != 0 {
		t.Fatalf("cat -f: exit %d: %s", code, errOut)
	}
	if b, err := os.ReadFile(got); err != nil || !bytes.Equal(b, v2) {
		t.Fatalf("cat -f wrote %q, %v; want the update", b, err)
	}

	// list answers from any nimbus's view: the update shows within a
	// moment on each.
	for _, p := range ps {
		testcluster.WaitFor(t, 10*time.Second, "version 2 on 2 of 2 in list at "+p.Addr(), func() error {
			out, errOut, code := stormctlIn(t, nil, "--seeds", p.Addr(), "blobstore", "list", "words")
			if code != 0 || !strings.Contains(out, "words  2 ") || !strings.Contains(out, " 2/2 ") {
				return fmt.Errorf("exit %d:\n%s%s", code, out, errOut)
			}
			return nil
		})
	}

	// set-acl and replication change the meta and leave the content.
	if out, errOut, code := blob(nil, "set-acl", "-s", "o::rwa,u:bob:r--", "words"); code != 0 || !strings.Contains(out, "u:bob:r--") {
		t.Fatalf("set-acl: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := blob(nil, "replication", "--update", "--replication-factor", "1", "words"); code != 0 || !strings.Contains(out, "/1\n") {
		t.Fatalf("replication --update: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := blob(nil, "replication", "--read", "words"); code != 0 || !strings.Contains(out, "/1\n") {
		t.Fatalf("replication --read: exit %d\n%s%s", code, out, errOut)
	}

	// Refusals: each with its exit code, nothing changed.
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"create", "-f", file, "words"}, 5},             // exists
		{[]string{"create", "-f", file, "a/b"}, 2},               // a key with a path: usage, nothing sent
		{[]string{"create", "-f", file, "-a", "u:x:z", "k"}, 2},  // an ACL that does not parse
		{[]string{"cat", "nothing"}, 4},                          // no such blob
		{[]string{"update", "-f", file, "nothing"}, 4},           // no such blob
		{[]string{"replication", "--update", "-r", "0", "k"}, 2}, // a factor below 1
	} {
		if _, errOut, code := blob(nil, tc.args...); code != tc.code || !strings.HasPrefix(errOut, "stormctl: ") {
			t.Errorf("%q: exit %d, want %d; stderr %q", tc.args, code, tc.code, errOut)
		}
	}
	if out, _, code := blob(nil, "cat", "words"); code != 0 || out != string(v2) {
		t.Fatalf("after the refusals, cat: exit %d, %q; want the update", code, out)
	}

	// delete, then the key is free.
	if out, errOut, code := blob(nil, "delete", "words"); code != 0 || out != "deleted words\n" {
		t.Fatalf("delete: exit %d\n%s%s", code, out, errOut)
	}
	if _, _, code := blob(nil, "cat", "words"); code != 4 {
		t.Fatalf("cat after delete: exit %d, want 4 (not found)", code)
	}
	if out, errOut, code := blob(bytes.NewReader(v2), "create", "-r", "1", "words"); code != 0 || !strings.Contains(out, "version:      1\n") {
		t.Fatalf("create after delete: exit %d\n%s%s", code, out, errOut)
	}
}

// stormctlIn runs the stormctl binary with stdin (nil: none) and args.
func stormctlIn(t *testing.T, stdin io.Reader, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(testcluster.Bin(t).Path("stormctl"), args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}
