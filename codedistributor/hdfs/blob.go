package hdfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	gohdfs "github.com/colinmarc/hdfs/v2"

	"github.com/nimbusha/nimbus/codedistributor"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// blobKeyDir holds every version of blob key kept in HDFS.
func (d *distributor) blobKeyDir(key string) string { return path.Join(d.blobDir, key) }

// uploadBlob copies a blob's bundle to its version's directory,
// blobstore.dir/<key>/<content SHA-256 in hex>/. A failure removes that
// directory if this upload made it; if it was there already (the same
// content uploaded again, perhaps the committed version), only the
// temporary files go.
func (d *distributor) uploadBlob(ctx context.Context, dir string, code codedistributor.Code) (meta *clusterv1.CodeMeta, err error) {
	version, err := blobVersion(code.TopologyID, code.Meta)
	if err != nil {
		return nil, err
	}
	c, err := d.conn()
	if err != nil {
		return nil, err
	}
	base := path.Join(d.blobKeyDir(code.TopologyID), version)
	existed, err := exists(c, base)
	if err != nil {
		d.reset(c, err)
		return nil, fmt.Errorf("hdfs: upload blob %s to %v: %w", code.TopologyID, d.opts.Addresses, err)
	}
	defer func() {
		if err != nil {
			d.reset(c, err)
			if c2, cerr := d.conn(); cerr == nil {
				discard(c2, base, existed, code.Meta)
			}
			err = fmt.Errorf("hdfs: upload blob %s to %v: %w", code.TopologyID, d.opts.Addresses, err)
		}
	}()
	return d.write(ctx, c, dir, base, code)
}

// discard removes what a failed upload to base left: the directory if the
// upload made it, else only the files being written.
func discard(c *gohdfs.Client, base string, existed bool, meta *clusterv1.CodeMeta) {
	if !existed {
		_ = c.RemoveAll(base)
		return
	}
	for _, f := range meta.GetFiles() {
		_ = c.Remove(path.Join(base, f.GetName()) + ".uploading")
	}
}

func exists(c *gohdfs.Client, p string) (bool, error) {
	_, err := c.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// CleanupBlob removes every version of blob key kept in HDFS but keep's,
// or the blob's whole directory when keep is nil.
func (d *distributor) CleanupBlob(_ context.Context, key string, keep *clusterv1.CodeMeta) error {
	if !oneElement(key) {
		return fmt.Errorf("hdfs: blob key %q is not a name inside %s", key, d.blobDir)
	}
	var version string
	if keep != nil {
		var err error
		if version, err = blobVersion(key, keep); err != nil {
			return err
		}
	}
	c, err := d.conn()
	if err != nil {
		return err
	}
	if err := d.removeBlobVersions(c, key, version); err != nil {
		d.reset(c, err)
		return fmt.Errorf("hdfs: clean up blob %s in %s: %w", key, d.blobKeyDir(key), err)
	}
	return nil
}

// removeBlobVersions removes the versions of key other than keep; all of
// them, and the key's directory, when keep is empty.
func (d *distributor) removeBlobVersions(c *gohdfs.Client, key, keep string) error {
	dir := d.blobKeyDir(key)
	if keep == "" {
		if err := c.RemoveAll(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	entries, err := c.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == keep {
			continue
		}
		if err := c.RemoveAll(path.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// ListBlobs returns the versions kept in HDFS of every blob under
// blobstore.dir.
func (d *distributor) ListBlobs(context.Context) (map[string][]string, error) {
	c, err := d.conn()
	if err != nil {
		return nil, err
	}
	keys, err := c.ReadDir(d.blobDir)
	if errors.Is(err, os.ErrNotExist) {
		return map[string][]string{}, nil
	}
	if err != nil {
		d.reset(c, err)
		return nil, err
	}
	out := make(map[string][]string, len(keys))
	for _, k := range keys {
		if !k.IsDir() {
			continue
		}
		versions, err := c.ReadDir(d.blobKeyDir(k.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			d.reset(c, err)
			return nil, err
		}
		out[k.Name()] = []string{}
		for _, v := range versions {
			out[k.Name()] = append(out[k.Name()], v.Name())
		}
	}
	return out, nil
}

// blobVersion names a blob version's directory: its content's SHA-256 in
// hex. A blob's bundle is one file, the content.
func blobVersion(key string, meta *clusterv1.CodeMeta) (string, error) {
	if !oneElement(key) {
		return "", fmt.Errorf("hdfs: blob key %q is not a name a directory can have", key)
	}
	files := meta.GetFiles()
	if len(files) != 1 || len(files[0].GetSha256()) == 0 {
		return "", fmt.Errorf("hdfs: the bundle of blob %s has %d files; a blob's is one file with its SHA-256", key, len(files))
	}
	return codedistributor.Hex(files[0].GetSha256()), nil
}

// oneElement accepts a name that stays inside the directory it is joined
// to.
func oneElement(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.Contains(name, "/")
}

// holds says whether directory dir is p or one of its ancestors.
func holds(dir, p string) bool {
	return strings.HasPrefix(path.Clean(p)+"/", path.Clean(dir)+"/")
}
