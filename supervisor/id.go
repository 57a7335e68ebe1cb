package supervisor

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// loadID returns the supervisor id kept in dir, creating one the first
// time, so a restarted supervisor comes back as itself.
func loadID(dir string) (string, error) {
	path := filepath.Join(dir, "supervisor-id")
	data, err := os.ReadFile(path)
	if err == nil {
		id := strings.TrimSpace(string(data))
		if id == "" || strings.ContainsAny(id, "/ \t\n") {
			return "", fmt.Errorf("supervisor: %s holds no valid id", path)
		}
		return id, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	id := "sup-" + hex.EncodeToString(b[:])
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o644); err != nil {
		return "", err
	}
	return id, os.Rename(tmp, path)
}
