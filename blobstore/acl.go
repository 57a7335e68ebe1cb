package blobstore

import (
	"github.com/nimbusha/nimbus/auth"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	"github.com/nimbusha/nimbus/validate"
)

// permOf is the ACL permission an action needs.
func permOf(act auth.Action) uint8 {
	switch act {
	case auth.ActionWriteBlob:
		return validate.BlobWrite
	case auth.ActionAdminBlob:
		return validate.BlobAdmin
	}
	return validate.BlobRead
}

// Target is what the authorizer decides act on the blob key against: its
// owner, and the users (or anyone) its ACL grants act's permission.
// Entries that no longer parse grant nothing.
func Target(key string, m *clusterv1.BlobMeta, act auth.Action) auth.Target {
	t := auth.Target{Topology: key, Owner: m.GetOwner()}
	perm := permOf(act)
	for _, s := range m.GetAcl() {
		entries, err := validate.BlobACL("acl", []string{s})
		if err != nil {
			continue
		}
		e := entries[0]
		if e.Perm&perm == 0 {
			continue
		}
		if e.Other {
			t.Anyone = true
		} else {
			t.Grantees = append(t.Grantees, e.User)
		}
	}
	return t
}

// NewACL is the ACL a create stores: the entries given, normalized, with
// the creator granted rwa (Storm's normalizeSettableBlobMeta). Without
// authentication there is no creator, and no entries mean anyone may do
// anything (Storm's WORLD_EVERYTHING).
func NewACL(field string, given []string, creator string) ([]string, error) {
	entries, err := validate.BlobACL(field, given)
	if err != nil {
		return nil, err
	}
	if creator != "" {
		entries = grant(entries, creator, validate.BlobRead|validate.BlobWrite|validate.BlobAdmin)
	} else if len(entries) == 0 {
		entries = []validate.BlobACLEntry{{Other: true, Perm: validate.BlobRead | validate.BlobWrite | validate.BlobAdmin}}
	}
	return format(entries), nil
}

// SetACL is the ACL a set-acl stores: the entries given, normalized, with
// the caller keeping admin so that it cannot lock itself out (Storm does
// the same). The owner keeps admin without an entry (auth's rules).
func SetACL(field string, given []string, caller string) ([]string, error) {
	entries, err := validate.BlobACL(field, given)
	if err != nil {
		return nil, err
	}
	if caller != "" {
		entries = grant(entries, caller, validate.BlobAdmin)
	}
	return format(entries), nil
}

func grant(entries []validate.BlobACLEntry, user string, perm uint8) []validate.BlobACLEntry {
	for i := range entries {
		if !entries[i].Other && entries[i].User == user {
			entries[i].Perm |= perm
			return entries
		}
	}
	return append(entries, validate.BlobACLEntry{User: user, Perm: perm})
}

func format(entries []validate.BlobACLEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.String()
	}
	return out
}
