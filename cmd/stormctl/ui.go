package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nimbusha/nimbus/certs"
	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/configs"
)

// stormctl ui: a local proxy to a nimbus's web UI and REST API, in the
// manner of kubectl proxy. A browser has no client certificate; the
// proxy, listening on loopback only, presents the user's own (the TLS keys
// stormctl uses for gRPC) to the nimbus, and to the supervisors'
// logviewers for the UI's log links (uilogviewer.go). Since it lends that
// identity, it answers only the browser that opened the URL it printed
// (a token exchanged for a cookie, uiaccess.go), only requests that name
// it (Host: its own loopback address, against DNS rebinding), and no
// cross-origin POSTs (another site's page acting as the user).

// defaultUIProxyPort is stormctl ui's port, as kubectl proxy's.
const defaultUIProxyPort = 8001

func newUICommand(g *globals) *cobra.Command {
	var port int
	var target string
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Open the web UI through a local proxy that uses your certificate",
		Long: "ui serves a nimbus's web UI and REST API on http://127.0.0.1:PORT/, forwarding\n" +
			"each request with your TLS client certificate (nimbus.grpc.tls.cert.path and\n" +
			"key.path, as for every command), so that a browser needs none; the UI's log\n" +
			"links go through it to the supervisors' logviewers the same way. It prints the\n" +
			"URL to open, with a token that lets that browser in (a cookie then), and runs\n" +
			"until Ctrl-C. Any other request is refused: without the token or cookie, to\n" +
			"another address than its own, or a page of another site acting through it.\n\n" +
			"--target is the nimbus UI to forward to; by default the first seed's host on\n" +
			"ui.port 8080, over https when TLS is on.",
		Example: "  stormctl --config .quickstart/alice.yaml ui\n" +
			"  stormctl ui --port 9000 --target https://nimbus2.example.com:8080",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, seeds, err := g.clientConfig()
			if err != nil {
				return err
			}
			to, err := uiTarget(target, cfg, seeds)
			if err != nil {
				return err
			}
			tlsm, err := certs.FromConfig(cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				return &opError{op: "ui", err: err, hint: "choose another --port"}
			}
			c, err := client.New(seeds, client.WithTransportCredentials(tlsm.ClientCredentials()))
			if err != nil {
				return &usageError{fmt.Errorf("--seeds: %w", err)}
			}
			defer c.Close()
			port := ln.Addr().(*net.TCPAddr).Port
			p := newUIProxy(to, port, newUIToken(), tlsm, nimbusLogviewers(c))
			fmt.Fprintf(g.stdout, "Open %s in a browser: the UI of %s, as you (the token is your access; Ctrl-C stops)\n", p.url(), to)
			return p.serve(cmd.Context(), ln)
		},
	}
	cmd.Flags().IntVar(&port, "port", defaultUIProxyPort, "loopback port to listen on (0 picks a free one)")
	cmd.Flags().StringVar(&target, "target", "", "the nimbus UI to forward to, http(s)://HOST:PORT (default: the first seed's host, ui.port 8080)")
	return cmd
}

// uiTarget is the UI URL to forward to: target if given, else the first
// seed's host on the default ui.port, https when TLS is on.
func uiTarget(target string, cfg *configs.Config, seeds []string) (*url.URL, error) {
	if target == "" {
		if len(seeds) == 0 {
			return nil, &usageError{errors.New("--target: no seeds to take a nimbus from")}
		}
		host, _, err := net.SplitHostPort(seeds[0])
		if err != nil {
			host = seeds[0]
		}
		scheme := "http"
		if cfg.TLSEnable {
			scheme = "https"
		}
		target = scheme + "://" + net.JoinHostPort(host, strconv.Itoa(configs.DefaultUIPort))
	}
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &usageError{fmt.Errorf("--target %q: want http(s)://HOST:PORT", target)}
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}

// uiProxy forwards what a local browser asks to one nimbus's UI, and
// its log links to the supervisors' logviewers.
type uiProxy struct {
	port       int // its loopback port
	access     *uiAccess
	csrf       *http.CrossOriginProtection
	nimbus     *httputil.ReverseProxy
	logviewers *logviewerRelay
}

// newUIProxy forwards to target, presenting tlsm's certificate (nil: TLS
// off, plaintext), to the holder of token; logviewers says where each
// supervisor's logviewer is.
func newUIProxy(target *url.URL, port int, token string, tlsm *certs.Reloader, logviewers logviewerLookup) *uiProxy {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil
	if tlsm != nil {
		transport.TLSClientConfig = tlsm.ClientConfig(target.Hostname())
	}
	return &uiProxy{
		port:   port,
		access: newUIAccess(token, port),
		csrf:   http.NewCrossOriginProtection(),
		nimbus: &httputil.ReverseProxy{
			Transport: transport,
			Rewrite: func(r *httputil.ProxyRequest) {
				r.SetURL(target) // the nimbus's own Host, which its check accepts
				dropBrowserHeaders(r.Out.Header)
			},
			ModifyResponse: func(resp *http.Response) error {
				// Relative to the UI's page at /: its log links go through
				// the relay.
				resp.Header.Set(uiLogviewerHeader, strings.TrimPrefix(logviewerRelayPath, "/"))
				return nil
			},
		},
		logviewers: newLogviewerRelay(logviewers, tlsm),
	}
}

// url is what to open: the proxy with its token.
func (p *uiProxy) url() string {
	return fmt.Sprintf("http://127.0.0.1:%d/?%s=%s", p.port, uiTokenParam, url.QueryEscape(p.access.token))
}

// ServeHTTP forwards r, in steps: it must name this proxy, come from the
// browser that opened the printed URL, and not be another site's; then it
// goes to the logviewer relay or the nimbus.
func (p *uiProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.ownHost(r.Host) {
		http.Error(w, fmt.Sprintf("stormctl ui: Host %q is not this proxy (127.0.0.1:%d or localhost:%d): refused", r.Host, p.port, p.port),
			http.StatusForbidden)
		return
	}
	if !p.access.admit(w, r) {
		return
	}
	if err := p.csrf.Check(r); err != nil {
		http.Error(w, "stormctl ui: "+err.Error()+": a page of another site may not act through this proxy", http.StatusForbidden)
		return
	}
	if strings.HasPrefix(r.URL.Path, logviewerRelayPath) {
		p.logviewers.ServeHTTP(w, r)
		return
	}
	p.nimbus.ServeHTTP(w, r)
}

// ownHost reports whether a request's Host names this proxy.
func (p *uiProxy) ownHost(host string) bool {
	port := strconv.Itoa(p.port)
	return host == "127.0.0.1:"+port || host == "localhost:"+port
}

// serve answers on ln until ctx ends, then lets requests in flight finish
// for a few seconds.
func (p *uiProxy) serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }() // ends with Shutdown below
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	<-done
	return nil
}
