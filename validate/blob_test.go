package validate

import (
	"errors"
	"strings"
	"testing"
)

func TestBlobKey(t *testing.T) {
	for _, ok := range []string{"dict", "my model.v2", "a..b", "_-.", strings.Repeat("k", 200)} {
		if err := BlobKey("key", ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "meta.pb", "a/b", "../x", "a\tb", "é", strings.Repeat("k", 201)} {
		if err := BlobKey("key", bad); err == nil || !strings.HasPrefix(err.Error(), "key: ") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestBlobACL(t *testing.T) {
	got, err := BlobACL("acl", []string{"u:alice:rwa", "o::r--", "u:bob:r", "u:bob:-w-"})
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, e := range got {
		text = append(text, e.String())
	}
	if strings.Join(text, ",") != "u:alice:rwa,o::r--,u:bob:rw-" {
		t.Fatalf("parsed %v", text)
	}
	for i, bad := range []string{"u:bob", "x:bob:r", "o:bob:r", "u::r", "u:bob:rx", "u:bob:rwar", "u:b ob:r"} {
		_, err := BlobACL("acl", []string{"o::r", bad})
		var ve *Error
		if !errors.As(err, &ve) || ve.Field != "acl[1]" {
			t.Errorf("%d %q: %v", i, bad, err)
		}
	}
}

func TestParseBlobstoreMap(t *testing.T) {
	uses, err := ParseBlobstoreMap("m", `{"dict": {"localname": "words", "uncompress": true}, "model": {"workerRestart": true}}`)
	if err != nil {
		t.Fatal(err)
	}
	if uses["dict"] != (BlobUse{LocalName: "words", Uncompress: true}) || uses["model"] != (BlobUse{LocalName: "model", WorkerRestart: true}) {
		t.Fatalf("parsed %v", uses)
	}
	for _, c := range []struct{ value, says string }{
		{`[]`, "JSON object"},
		{`{"a/b": {}}`, `m["a/b"]`},
		{`{"a": {"localName": "x"}}`, `unknown field "localName"`},
		{`{"a": {"localname": "x", "colour": 1}}`, `unknown field "colour"`},
		{`{"a": {"localname": "../x"}}`, `m["a"].localname`},
		{`{"a": {"localname": "x"}, "b": {"localname": "x"}}`, `also the localname of "a"`},
		{`{"a": {"uncompress": "yes"}}`, "uncompress"},
		{`{"a": {"localname": "status"}}`, "file of the worker protocol"},
		{`{"my model": {}}`, `m["my model"].localname`}, // a key with a space needs a localname
		{`{"a": {"localname": ".hidden"}}`, "begins with a dot"},
	} {
		_, err := ParseBlobstoreMap("m", c.value)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want it to say %s", c.value, err, c.says)
		}
	}
}
