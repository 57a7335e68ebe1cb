package testcluster

import (
	"os"
	"strings"
)

// tail returns the last n lines of the file at path.
func tail(path string, n int) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return lines[max(0, len(lines)-n):], nil
}
