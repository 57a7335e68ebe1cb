package certs

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Modes of the files NewCA and Issue write: a key is for its user only.
const (
	certMode = 0o644
	keyMode  = 0o600
)

// writePair writes a certificate and its key as PEM into new files in dir,
// creating dir if need be. Neither file may exist; if either cannot be
// written, neither is left.
func writePair(dir, certPath string, der []byte, keyPath string, key crypto.Signer) error {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("certs: encode the key: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	if err := writeNew(keyPath, keyMode, &pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}); err != nil {
		return err
	}
	if err := writeNew(certPath, certMode, &pem.Block{Type: "CERTIFICATE", Bytes: der}); err != nil {
		_ = os.Remove(keyPath)
		return err
	}
	return nil
}

// writeNew creates path with mode and writes b to it as PEM. An existing
// file is an error: a CA's key or a certificate in use is not replaced by
// accident.
func writeNew(path string, mode os.FileMode, b *pem.Block) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("certs: %s already exists; remove it first, or write elsewhere", path)
	}
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	err = pem.Encode(f, b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	return nil
}
