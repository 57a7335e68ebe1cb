package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/nimbusha/nimbus/configs"
)

// Files names a process's TLS material: the paths of
// nimbus.grpc.tls.cert.path, nimbus.grpc.tls.key.path and
// nimbus.grpc.tls.truststore.path.
type Files struct {
	// Cert is this process's certificate, PEM, followed by any intermediate
	// CA certificates. Cert and Key are both empty for a client that has no
	// certificate of its own (it can reach only servers that require none).
	Cert string
	// Key is the certificate's private key, PEM (PKCS #8, SEC 1 or PKCS #1).
	Key string
	// Truststore is the CA certificates, PEM, that verify peers.
	Truststore string
	// Settings are the configuration keys that named the files, for
	// errors; empty, they are nimbus.grpc.tls.*'s.
	Settings Settings
}

// Settings name the configuration keys of a Files' paths.
type Settings struct {
	Cert, Key, Truststore string
}

// settings returns f's keys, nimbus.grpc.tls.*'s where none is given.
func (f Files) settings() Settings {
	s := f.Settings
	if s.Cert == "" {
		s.Cert = configs.KeyTLSCert
	}
	if s.Key == "" {
		s.Key = configs.KeyTLSKey
	}
	if s.Truststore == "" {
		s.Truststore = configs.KeyTLSTruststore
	}
	return s
}

// source is one file as an error names it: what it is, its path, and the
// setting that named it, if any.
type source struct {
	what, path, setting string
}

func (s source) String() string {
	if s.setting == "" {
		return s.what + " " + s.path
	}
	return fmt.Sprintf("%s %s (%s)", s.what, s.path, s.setting)
}

// read reads the file, saying which file it is when it cannot.
func (s source) read() ([]byte, error) {
	b, err := os.ReadFile(s.path)
	if err == nil {
		return b, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("certs: %s does not exist", s)
	}
	// The path error repeats the path the message has already named.
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		err = pathErr.Err
	}
	return nil, fmt.Errorf("certs: cannot read %s: %w", s, err)
}

// blocks reads the file's PEM blocks; a file with none is not PEM.
func (s source) blocks() ([]*pem.Block, error) {
	b, err := s.read()
	if err != nil {
		return nil, err
	}
	var out []*pem.Block
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		out = append(out, block)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("certs: %s is not PEM (no -----BEGIN line)", s)
	}
	return out, nil
}

// certificates parses the file's CERTIFICATE blocks, in order, ignoring
// other blocks (a certificate and its key may share a file). A file without
// one is an error that says what the file holds instead.
func (s source) certificates() ([]*x509.Certificate, error) {
	blocks, err := s.blocks()
	if err != nil {
		return nil, err
	}
	var out []*x509.Certificate
	for i, b := range blocks {
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certs: %s: block %d is not a valid certificate: %v", s, i+1, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("certs: %s has no certificates (it holds %s)", s, blockTypes(blocks))
	}
	return out, nil
}

// privateKey parses the file's first private key block.
func (s source) privateKey() (crypto.Signer, error) {
	blocks, err := s.blocks()
	if err != nil {
		return nil, err
	}
	for _, b := range blocks {
		switch b.Type {
		case "ENCRYPTED PRIVATE KEY":
			return nil, fmt.Errorf("certs: %s is encrypted; give the key unencrypted, readable only by its user (mode 0600)", s)
		case "PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY":
			key, err := parseKey(b)
			if err != nil {
				return nil, fmt.Errorf("certs: %s is not a valid private key: %v", s, err)
			}
			return key, nil
		}
	}
	return nil, fmt.Errorf("certs: %s has no private key (it holds %s)", s, blockTypes(blocks))
}

// parseKey parses a private key block by its type.
func parseKey(b *pem.Block) (crypto.Signer, error) {
	var key any
	var err error
	switch b.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(b.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(b.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(b.Bytes)
	}
	if err != nil {
		return nil, err
	}
	switch k := key.(type) {
	case *ecdsa.PrivateKey, *rsa.PrivateKey, ed25519.PrivateKey:
		return k.(crypto.Signer), nil
	}
	return nil, fmt.Errorf("unsupported key type %T", key)
}

// blockTypes lists the types of blocks, for an error about a file that
// holds the wrong thing ("PRIVATE KEY": the paths may be swapped).
func blockTypes(blocks []*pem.Block) string {
	types := make([]string, len(blocks))
	for i, b := range blocks {
		types[i] = b.Type
	}
	return strings.Join(types, ", ")
}
