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
	"time"

	"github.com/spf13/cobra"

	"github.com/nimbusha/nimbus/certs"
	"github.com/nimbusha/nimbus/configs"
)

// stormctl ui: a local proxy to a nimbus's web UI and REST API, in the
// manner of kubectl proxy. A browser has no client certificate; the
// proxy, listening on loopback only, presents the user's own (the TLS keys
// stormctl uses for gRPC) to the nimbus. Since it lends that identity to
// whatever reaches it, it answers only requests that name it (Host: its
// own loopback address, against DNS rebinding) and refuses cross-origin
// POSTs (another site's page acting as the user) before forwarding.

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
			"key.path, as for every command), so that a browser needs none. It prints the\n" +
			"URL to open and runs until Ctrl-C. Only requests to its own address are\n" +
			"answered, and a page of another site may not act through it.\n\n" +
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
			p := newUIProxy(to, ln.Addr().(*net.TCPAddr).Port, tlsm)
			fmt.Fprintf(g.stdout, "Open http://127.0.0.1:%d/ in a browser: the UI of %s, as you (Ctrl-C stops)\n", p.port, to)
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

// uiProxy forwards what a local browser asks to one nimbus's UI.
type uiProxy struct {
	port  int // its loopback port
	csrf  *http.CrossOriginProtection
	proxy *httputil.ReverseProxy
}

// newUIProxy forwards to target, presenting tlsm's certificate (nil: TLS
// off, plaintext).
func newUIProxy(target *url.URL, port int, tlsm *certs.Reloader) *uiProxy {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if tlsm != nil {
		transport.TLSClientConfig = tlsm.ClientConfig(target.Hostname())
	}
	return &uiProxy{
		port: port,
		csrf: http.NewCrossOriginProtection(),
		proxy: &httputil.ReverseProxy{
			Transport: transport,
			Rewrite: func(r *httputil.ProxyRequest) {
				r.SetURL(target) // the nimbus's own Host, which its check accepts
				// Checked here, against this proxy's origin; the nimbus
				// would compare them with its own.
				for _, h := range []string{"Origin", "Referer", "Sec-Fetch-Site", "Sec-Fetch-Mode", "Sec-Fetch-Dest", "Sec-Fetch-User"} {
					r.Out.Header.Del(h)
				}
			},
		},
	}
}

// ServeHTTP forwards r if it names this proxy and is not another site's.
func (p *uiProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.ownHost(r.Host) {
		http.Error(w, fmt.Sprintf("stormctl ui: Host %q is not this proxy (127.0.0.1:%d or localhost:%d): refused", r.Host, p.port, p.port),
			http.StatusForbidden)
		return
	}
	if err := p.csrf.Check(r); err != nil {
		http.Error(w, "stormctl ui: "+err.Error()+": a page of another site may not act through this proxy", http.StatusForbidden)
		return
	}
	p.proxy.ServeHTTP(w, r)
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
