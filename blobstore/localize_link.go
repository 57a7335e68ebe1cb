package blobstore

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// Link makes dir/name a symbolic link to target, replacing the link that
// is there atomically: a new link, made under a hidden temporary name,
// is renamed over it, so a reader that opens dir/name gets the old target
// or the new, never neither nor a mix. A directory or file at dir/name
// that is not a link is refused, not replaced.
func Link(dir, name, target string) error {
	p := filepath.Join(dir, name)
	if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink == 0 {
		return fmt.Errorf("blobstore: %s is not a link to a blob; not replaced", p)
	}
	if cur, err := os.Readlink(p); err == nil && cur == target {
		return nil
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(dir, "."+name+".link-"+hex.EncodeToString(rnd[:]))
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
