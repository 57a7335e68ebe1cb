package testcluster

import (
	"net/http"
	"testing"
)

// UIClient is an HTTP client of the nimbuses' REST API and web UI
// (Process.UIURL) as the Cluster's own clients are: plain HTTP, or in a
// Cluster WithSecurity HTTPS as Security.Admin. Its idle connections are
// closed when the test ends.
func (c *Cluster) UIClient(t testing.TB) *http.Client {
	if c.Security == nil {
		return &http.Client{}
	}
	return c.UIClientAs(t, c.Security.Admin)
}

// UIClientAs is an HTTPS client of the REST API as id (a Security's
// Client, Foreign or Anonymous): Identity.TLSConfig.
func (c *Cluster) UIClientAs(t testing.TB, id Identity) *http.Client {
	cfg, err := id.TLSConfig()
	if err != nil {
		t.Fatalf("testcluster: the TLS material of %q: %v", id.Principal, err)
	}
	tr := &http.Transport{TLSClientConfig: cfg}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}
