package daemon

import (
	"crypto/tls"
	"fmt"
	"log/slog"

	"github.com/nimbusha/nimbus/certs"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/configs"
)

// zkTLSCheck is what a failed handshake with ZooKeeper tells the operator
// to look at.
var zkTLSCheck = fmt.Sprintf("check that storm.zookeeper.servers names ZooKeeper's secureClientPort, that %s holds the CA that signed ZooKeeper's certificate, "+
	"that %s holds a certificate ZooKeeper trusts if its ssl.clientAuth asks for one, and, with %s, that the certificate names the host dialed",
	configs.KeyZKSSLTruststore, configs.KeyZKSSLKeystore, configs.KeyZKSSLHostnameVerification)

// LoadZKTLS loads the TLS material cfg names for ZooKeeper
// (storm.zookeeper.ssl.*) and returns the session's TLS, or nil with TLS
// to ZooKeeper off. It fails, naming the key, when a file cannot be used.
// The files are re-read when they change (certs.Reloader).
func LoadZKTLS(cfg *configs.Config, log *slog.Logger) (*cluster.TLS, error) {
	if !cfg.ZKSSLEnable {
		return nil, nil
	}
	files := certs.Files{
		// ZooKeeper's PEM keystore: the chain and its key in one file.
		Cert: cfg.ZKSSLKeystore, Key: cfg.ZKSSLKeystore, Truststore: cfg.ZKSSLTruststore,
		Settings: certs.Settings{Cert: configs.KeyZKSSLKeystore, Key: configs.KeyZKSSLKeystore, Truststore: configs.KeyZKSSLTruststore},
	}
	r, err := certs.Load(files, log.With("for", "zookeeper"))
	if err != nil {
		return nil, err
	}
	config := r.ClientConfig
	if !cfg.ZKSSLHostnameVerification {
		config = func(host string) *tls.Config {
			c := r.ClientConfigAnyName()
			c.ServerName = host // for SNI and for errors; not checked
			return c
		}
	}
	return &cluster.TLS{Config: config, Check: zkTLSCheck}, nil
}

// refuseAll is a TLS configuration whose every handshake fails with err:
// what a session gets when its TLS material could not be loaded.
func refuseAll(err error) *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, // VerifyConnection refuses every server
		VerifyConnection:   func(tls.ConnectionState) error { return err },
	}
}
