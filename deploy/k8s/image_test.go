package k8s

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// The image ../Containerfile builds, from freshly built static binaries:
// run as the numeric user 10001, the nimbus its entrypoint, and nothing in
// it but the binaries (and two lines of /etc/passwd). Containers cannot
// run here, so its configuration is what is checked (buildah inspect).
func TestImage(t *testing.T) {
	if _, err := exec.LookPath("buildah"); err != nil {
		t.Skip("buildah is not installed (scripts/install-test-deps.sh installs it)")
	}
	ctxDir := t.TempDir()
	bins := []string{"nimbus", "supervisor", "stormctl"}
	build := exec.Command("go", "build", "-o", filepath.Join(ctxDir, "bin")+"/", "./cmd/nimbus", "./cmd/supervisor", "./cmd/stormctl")
	build.Dir = "../.."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	run(t, build)
	var binBytes int64
	for _, b := range bins {
		fi, err := os.Stat(filepath.Join(ctxDir, "bin", b))
		if err != nil {
			t.Fatal(err)
		}
		binBytes += fi.Size()
	}
	for _, f := range []string{"passwd", "group"} {
		if err := os.MkdirAll(filepath.Join(ctxDir, "deploy", "image"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ctxDir, "deploy", "image", f), read(t, filepath.Join("..", "image", f)), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// A storage of the test's own, removed with it.
	store := t.TempDir()
	buildah := func(args ...string) []byte {
		base := []string{"--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run"), "--storage-driver", "vfs"}
		return run(t, exec.Command("buildah", append(base, args...)...))
	}
	const tag = "localhost/nimbus-ha:test"
	buildah("bud", "--quiet", "-f", "../Containerfile", "-t", tag, ctxDir)
	t.Cleanup(func() { buildah("rmi", "--all", "--force") })

	var img struct {
		OCIv1 struct {
			Config struct {
				User       string
				Entrypoint []string
				Cmd        []string
			} `json:"config"`
		}
		Manifest string
	}
	if err := json.Unmarshal(buildah("inspect", "--type", "image", tag), &img); err != nil {
		t.Fatal(err)
	}
	cfg := img.OCIv1.Config
	if cfg.User != "10001:10001" {
		t.Errorf("user %q: want 10001:10001", cfg.User)
	}
	if !slices.Equal(cfg.Entrypoint, []string{"/usr/bin/nimbus"}) || !slices.Equal(cfg.Cmd, []string{"--config", "/etc/storm/storm.yaml"}) {
		t.Errorf("entrypoint %v, cmd %v: want the nimbus with /etc/storm/storm.yaml", cfg.Entrypoint, cfg.Cmd)
	}
	var manifest struct{ Layers []struct{ Size int64 } }
	if err := json.Unmarshal([]byte(img.Manifest), &manifest); err != nil {
		t.Fatal(err)
	}
	var size int64
	for _, l := range manifest.Layers {
		size += l.Size
	}
	if slack := int64(1 << 20); size > binBytes+slack {
		t.Errorf("image %d bytes, the binaries %d: more than %d bytes besides them", size, binBytes, slack)
	}
}

// run runs cmd and returns its output, failing the test with its stderr.
func run(t *testing.T, cmd *exec.Cmd) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, stderr.Bytes())
	}
	return out
}
