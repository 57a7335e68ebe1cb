package integration

import (
	"bytes"
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/client"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// blobACLs: a blob's ACL decides who reads, writes and administers it, in
// Storm's syntax, over real TLS; the owner and admins always administer
// it, a list shows each caller only what it may read, and the code port
// serves blob bundles to the daemons only.
func (s *secureCluster) blobACLs(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	alice := sdkClient(t, s.sec.Client(t, "alice"), s.nimbuses...)
	bob := sdkClient(t, s.sec.Client(t, "bob"), s.nimbuses...)
	trudy := sdkClient(t, s.sec.Client(t, "trudy"), s.nimbuses...)
	admin := sdkClient(t, s.sec.Admin, s.nimbuses...)
	two := int32(2)
	refused := func(what string, err error, want codes.Code) {
		t.Helper()
		if status.Code(err) != want {
			t.Fatalf("%s: got %v, want %v", what, err, want)
		}
	}

	// trudy is in no list: she may not create blobs.
	_, err := trudy.CreateBlob(ctx, "trudys", bytes.NewReader([]byte("x")), client.BlobOptions{Size: 1})
	refused("trudy creates", err, codes.PermissionDenied)
	// alice creates one bob may read; the owner is alice, whatever she sends.
	_, err = alice.CreateBlob(ctx, "words", bytes.NewReader([]byte("a b c")), client.BlobOptions{Size: 5, ReplicationFactor: &two, ACL: []string{"u:bob:r--"}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	info, err := bob.ReadBlob(ctx, "words", &out)
	if err != nil || out.String() != "a b c" || info.GetOwner() != "alice" {
		t.Fatalf("bob reads: %v, %q, owner %q", err, out.String(), info.GetOwner())
	}
	if got := info.GetAcl(); len(got) != 2 || got[0] != "u:bob:r--" || got[1] != "u:alice:rwa" {
		t.Fatalf("the ACL stored is %v, want bob's entry and alice's rwa", got)
	}
	_, err = trudy.ReadBlob(ctx, "words", &bytes.Buffer{})
	refused("trudy reads", err, codes.PermissionDenied)
	_, err = bob.UpdateBlob(ctx, "words", bytes.NewReader([]byte("x")), client.BlobOptions{Size: 1})
	refused("bob updates", err, codes.PermissionDenied)
	refused("bob deletes", bob.DeleteBlob(ctx, "words"), codes.PermissionDenied)
	_, err = bob.SetBlobACL(ctx, "words", []string{"u:bob:rwa"})
	refused("bob grants himself", err, codes.PermissionDenied)

	// Lists show each caller what it may read.
	for who, cl := range map[string]*client.Client{"bob": bob, "trudy": trudy, "admin": admin} {
		list, err := cl.ListBlobs(ctx)
		if err != nil {
			t.Fatalf("%s lists: %v", who, err)
		}
		if want := map[string]int{"bob": 1, "trudy": 0, "admin": 1}[who]; len(list.GetBlobs()) != want {
			t.Fatalf("%s lists %d blobs, want %d", who, len(list.GetBlobs()), want)
		}
	}

	// alice gives bob write; he updates. She may still administer it with
	// no entry of her own: she owns it.
	if _, err := alice.SetBlobACL(ctx, "words", []string{"u:bob:rw-"}); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.UpdateBlob(ctx, "words", bytes.NewReader([]byte("d e")), client.BlobOptions{Size: 3}); err != nil {
		t.Fatalf("bob updates with w: %v", err)
	}
	if _, err := alice.SetBlobReplication(ctx, "words", 1); err != nil {
		t.Fatalf("the owner sets the replication: %v", err)
	}

	// The code port serves bundles to the daemons, not to users.
	_, err = nimbusv1.NewCodeServiceClient(s.c.ConnAs(s.leader.Addr(), s.sec.Client(t, "bob"))).GetCodeMeta(ctx, &nimbusv1.GetCodeMetaRequest{TopologyId: "words", Blob: true})
	refused("bob fetches the bundle", err, codes.PermissionDenied)

	// An admin may do anything.
	out.Reset()
	if _, err := admin.ReadBlob(ctx, "words", &out); err != nil || out.String() != "d e" {
		t.Fatalf("admin reads: %v, %q", err, out.String())
	}
	if err := admin.DeleteBlob(ctx, "words"); err != nil {
		t.Fatalf("admin deletes: %v", err)
	}
}
