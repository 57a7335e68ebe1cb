package validate

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/workerproto"
)

// Blob limits. A key is a ZooKeeper node name under /blobstore and a
// directory name in every node's blob store, so it is one path element
// that both accept.
const (
	maxBlobKeyLen = 200
	maxBlobACLLen = 64 // entries
	// maxBlobUserLen bounds a user name in an ACL entry; principals are
	// certificate names or user names, both short.
	maxBlobUserLen = 256
	// MaxBlobReplication bounds a replication factor: more nimbuses than
	// any cluster runs, and still an int32 for ZooKeeper.
	MaxBlobReplication = 100
)

const blobKeyRule = "must be 1-200 bytes of letters, digits, '_', '.', '-' and spaces (Storm's key rule without tabs, which ZooKeeper refuses), not \".\", \"..\" or \"meta.pb\""

// BlobKey checks a blob's key (Storm's KEY_PATTERN, less the tab).
func BlobKey(field, key string) error {
	if key == "" || len(key) > maxBlobKeyLen || key == "." || key == ".." || key == "meta.pb" ||
		!onlyBytes(key, func(b byte) bool { return isNameByte(b) || b == ' ' }) {
		return Invalid(field, "%s, got %s", blobKeyRule, showValue(key))
	}
	return nil
}

// Blob permissions, as Storm's BlobStoreAclHandler has them.
const (
	BlobRead  uint8 = 1 << iota // r: read the content and meta
	BlobWrite                   // w: update and delete
	BlobAdmin                   // a: change the ACL and replication
)

// BlobACLEntry is one parsed entry of a blob's ACL: "u:alice:rwa" gives
// user alice everything, "o::r--" lets anyone read.
type BlobACLEntry struct {
	Other bool   // o: anyone; else u: User
	User  string // empty for o
	Perm  uint8  // BlobRead | BlobWrite | BlobAdmin
}

// String is the entry in Storm's normalized form: "u:alice:rw-".
func (e BlobACLEntry) String() string {
	kind, user := "u", e.User
	if e.Other {
		kind, user = "o", ""
	}
	perm := []byte("---")
	for i, c := range "rwa" {
		if e.Perm&(1<<i) != 0 {
			perm[i] = byte(c)
		}
	}
	return kind + ":" + user + ":" + string(perm)
}

const blobACLRule = `must be "u:USER:PERMS" or "o::PERMS", PERMS made of r, w, a and - (Storm's syntax, e.g. "u:alice:rwa", "o::r--")`

// BlobACL parses a blob's ACL entries, naming field[i] of the first that
// does not parse. Two entries for the same user (or two o entries) merge.
func BlobACL(field string, entries []string) ([]BlobACLEntry, error) {
	if len(entries) > maxBlobACLLen {
		return nil, Invalid(field, "has %d entries, at most %d", len(entries), maxBlobACLLen)
	}
	var out []BlobACLEntry
	for i, s := range entries {
		e, ok := parseBlobACLEntry(s)
		if !ok {
			return nil, Invalid(indexed(field, i), "%s, got %s", blobACLRule, showValue(s))
		}
		merged := false
		for j := range out {
			if out[j].Other == e.Other && out[j].User == e.User {
				out[j].Perm |= e.Perm
				merged = true
			}
		}
		if !merged {
			out = append(out, e)
		}
	}
	return out, nil
}

func parseBlobACLEntry(s string) (BlobACLEntry, bool) {
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) != 3 {
		return BlobACLEntry{}, false
	}
	var e BlobACLEntry
	switch parts[0] {
	case "u":
		if parts[1] == "" || len(parts[1]) > maxBlobUserLen || strings.ContainsAny(parts[1], " \t\n\r") {
			return e, false
		}
		e.User = parts[1]
	case "o":
		if parts[1] != "" {
			return e, false
		}
		e.Other = true
	default:
		return e, false
	}
	if parts[2] == "" || len(parts[2]) > 3 {
		return e, false
	}
	for _, c := range parts[2] {
		switch c {
		case 'r':
			e.Perm |= BlobRead
		case 'w':
			e.Perm |= BlobWrite
		case 'a':
			e.Perm |= BlobAdmin
		case '-':
		default:
			return e, false
		}
	}
	return e, true
}

// BlobReplication checks a replication factor.
func BlobReplication(field string, n int32) error {
	if n < 1 || n > MaxBlobReplication {
		return Invalid(field, "must be 1-%d, got %d", MaxBlobReplication, n)
	}
	return nil
}

// BlobHeader checks the header that opens a CreateBlob (create) or
// UpdateBlob stream: an update names the key only.
func BlobHeader(h *nimbusv1.BlobHeader, create bool) error {
	if h == nil {
		return Invalid("header", "the first message must be the blob's header")
	}
	if err := BlobKey("header.key", h.GetKey()); err != nil {
		return err
	}
	if h.Size != nil && h.GetSize() < 0 {
		return Invalid("header.size", "must not be negative, got %d", h.GetSize())
	}
	if !create {
		if len(h.GetAcl()) > 0 {
			return Invalid("header.acl", "is set by create or set-acl, not by update")
		}
		if h.ReplicationFactor != nil {
			return Invalid("header.replication_factor", "is set by create or replication --update, not by update")
		}
		return nil
	}
	if _, err := BlobACL("header.acl", h.GetAcl()); err != nil {
		return err
	}
	if h.ReplicationFactor != nil {
		return BlobReplication("header.replication_factor", h.GetReplicationFactor())
	}
	return nil
}

// ReadBlob checks a ReadBlob request.
func ReadBlob(req *nimbusv1.ReadBlobRequest) error { return BlobKey("key", req.GetKey()) }

// DeleteBlob checks a DeleteBlob request.
func DeleteBlob(req *nimbusv1.DeleteBlobRequest) error { return BlobKey("key", req.GetKey()) }

// ListBlobs checks a ListBlobs request.
func ListBlobs(req *nimbusv1.ListBlobsRequest) error {
	if len(req.GetKeys()) > maxBlobACLLen*16 {
		return Invalid("keys", "names %d blobs, at most %d", len(req.GetKeys()), maxBlobACLLen*16)
	}
	for i, k := range req.GetKeys() {
		if err := BlobKey(indexed("keys", i), k); err != nil {
			return err
		}
	}
	return nil
}

// SetBlobMeta checks a SetBlobMeta request: it must change something.
func SetBlobMeta(req *nimbusv1.SetBlobMetaRequest) error {
	if err := BlobKey("key", req.GetKey()); err != nil {
		return err
	}
	if !req.GetSetAcl() && len(req.GetAcl()) > 0 {
		return Invalid("acl", "is given without set_acl")
	}
	if req.GetSetAcl() {
		if _, err := BlobACL("acl", req.GetAcl()); err != nil {
			return err
		}
	}
	if req.ReplicationFactor != nil {
		if err := BlobReplication("replication_factor", req.GetReplicationFactor()); err != nil {
			return err
		}
	} else if !req.GetSetAcl() {
		return Invalid("replication_factor", "set_acl or replication_factor must be set: nothing to change")
	}
	return nil
}

// indexed names element i of a repeated field: "acl[2]".
func indexed(field string, i int) string { return field + "[" + strconv.Itoa(i) + "]" }

// TopologyBlobstoreMap is Storm's key for the blobs a topology uses: a JSON
// object from blob key to how its workers see it.
const TopologyBlobstoreMap = "topology.blobstore.map"

// BlobUse is one entry of topology.blobstore.map.
type BlobUse struct {
	// LocalName is the file (or, uncompressed, directory) in the worker's
	// directory; the key when the entry does not set it.
	LocalName string `json:"localname"`
	// Uncompress unpacks the blob (a .zip, .tar, .tar.gz/.tgz) into a
	// directory.
	Uncompress bool `json:"uncompress"`
	// WorkerRestart restarts the worker on an update, instead of telling it.
	WorkerRestart bool `json:"workerRestart"`
}

// ParseBlobstoreMap parses a topology.blobstore.map value, naming the key
// or field that is wrong: every key a blob key, every localname a name the
// worker protocol leaves free (workerproto.CheckLocalName) used once, no
// field Storm does not have. A key with a space needs a localname.
func ParseBlobstoreMap(field, v string) (map[string]BlobUse, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(v), &raw); err != nil {
		return nil, Invalid(field, `must be a JSON object {"KEY": {"localname": "NAME", "uncompress": BOOL, "workerRestart": BOOL}}: %v`, err)
	}
	out := make(map[string]BlobUse, len(raw))
	names := map[string]string{}
	for _, key := range slices.Sorted(maps.Keys(raw)) {
		f := field + "[" + showValue(key) + "]"
		if err := BlobKey(f, key); err != nil {
			return nil, err
		}
		use, err := parseBlobUse(raw[key])
		if err != nil {
			return nil, Invalid(f, "must be {\"localname\": \"NAME\", \"uncompress\": BOOL, \"workerRestart\": BOOL}: %v", err)
		}
		if use.LocalName == "" {
			use.LocalName = key
		}
		// A file of the worker's directory, beside the protocol's own.
		if err := workerproto.CheckLocalName(use.LocalName); err != nil {
			return nil, Invalid(f+".localname", "%v", err)
		}
		if other, dup := names[use.LocalName]; dup {
			return nil, Invalid(f+".localname", "%s is also the localname of %s", showValue(use.LocalName), showValue(other))
		}
		names[use.LocalName] = key
		out[key] = use
	}
	return out, nil
}

// parseBlobUse decodes one entry, its field names exactly as Storm spells
// them (encoding/json alone would take "LocalName" for "localname").
func parseBlobUse(data []byte) (BlobUse, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return BlobUse{}, err
	}
	var use BlobUse
	for _, name := range slices.Sorted(maps.Keys(fields)) { // the same error every time
		v := fields[name]
		var err error
		switch name {
		case "localname":
			err = json.Unmarshal(v, &use.LocalName)
		case "uncompress":
			err = json.Unmarshal(v, &use.Uncompress)
		case "workerRestart":
			err = json.Unmarshal(v, &use.WorkerRestart)
		default:
			return BlobUse{}, fmt.Errorf("unknown field %q", name)
		}
		if err != nil {
			return BlobUse{}, fmt.Errorf("%s: %v", name, err)
		}
	}
	return use, nil
}
