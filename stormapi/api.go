package stormapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/apistatus"
	"github.com/nimbusha/nimbus/auth"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// Reader answers the API's reads: the nimbus's own NimbusService
// handlers, called in process.
type Reader interface {
	GetClusterInfo(context.Context, *nimbusv1.GetClusterInfoRequest) (*nimbusv1.GetClusterInfoResponse, error)
	GetTopologyInfo(context.Context, *nimbusv1.GetTopologyInfoRequest) (*nimbusv1.GetTopologyInfoResponse, error)
	GetTopologyConf(context.Context, *nimbusv1.GetTopologyConfRequest) (*nimbusv1.GetTopologyConfResponse, error)
	GetNimbusConfig(context.Context, *nimbusv1.GetNimbusConfigRequest) (*nimbusv1.GetNimbusConfigResponse, error)
	ListBlobs(context.Context, *nimbusv1.ListBlobsRequest) (*nimbusv1.ListBlobsResponse, error)
}

// Actor takes the API's actions at the leader: the Go SDK's
// *client.Client, whose leader-only calls find and follow the leader.
type Actor interface {
	ActivateTopology(ctx context.Context, name string) error
	DeactivateTopology(ctx context.Context, name string) error
	KillTopology(ctx context.Context, req *nimbusv1.KillTopologyRequest) error
	RebalanceTopology(ctx context.Context, req *nimbusv1.RebalanceTopologyRequest) error
	HandOver(ctx context.Context, to string) (*nimbusv1.HandOverResponse, error)
	RestartWorker(ctx context.Context, name, worker string) (*nimbusv1.RestartWorkerResponse, error)
	SetLogConfig(ctx context.Context, req *nimbusv1.SetLogConfigRequest) (*nimbusv1.SetLogConfigResponse, error)
}

// State is what the answering nimbus knows now of leadership and of how
// fresh its caches are.
type State struct {
	Leader        string        // the leader's host:port; "" when there is none
	LeaderlessFor time.Duration // how long this nimbus has seen no leader; 0 with one
	// CacheAge is 0 while the nimbus's ZooKeeper session is up (its
	// watches deliver every change), else how long since it was.
	CacheAge time.Duration
	// Leads is whether the answering nimbus leads: only the leader knows
	// which topologies use each blob.
	Leads bool
}

// Config is what an API needs.
type Config struct {
	Reads   Reader
	Actions Actor
	State   func() State
	Authz   *auth.Authorizer
	// Seeds are nimbus.seeds as host:port: a seed that is not registered
	// is listed as Offline, as Storm does.
	Seeds []string
	// HostNames are the names besides IP addresses and localhost a
	// request's Host may give (host.go); nil: none.
	HostNames      func() []string
	ActionsEnabled bool // ui.actions.enabled
	// LendsIdentity says Actions present this nimbus's own certificate:
	// an action whose caller has no principal (authentication off here)
	// is then refused, not sent to the leader as this nimbus.
	LendsIdentity bool
	ActionTimeout time.Duration // bounds a forwarded action; 0: defaultActionTimeout
	Version       string        // Nimbus-HA's, as nimbusHaVersion
	Log           *slog.Logger
	Metrics       prometheus.Registerer // nil: not registered
	Now           func() time.Time      // nil: time.Now
}

// defaultActionTimeout bounds a forwarded action, leader lookup included.
const defaultActionTimeout = 15 * time.Second

// maxBodyBytes bounds a request body (a rebalance's options).
const maxBodyBytes = 64 << 10

// API is the http.Handler of /api/v1.
type API struct {
	cfg  Config
	mux  *http.ServeMux
	snap atomic.Pointer[snapshot]
	// csrf refuses a browser's cross-origin POST (by Sec-Fetch-Site or
	// Origin): with client certificates, a browser would present its
	// user's to any page's request. API clients send neither header.
	csrf    *http.CrossOriginProtection
	counted *metrics // requests by route and code
	// actions is the action of each POST route's pattern, for audit lines.
	actions map[string]auth.Action
}

// New returns the API over cfg.
func New(cfg Config) *API {
	if cfg.ActionTimeout == 0 {
		cfg.ActionTimeout = defaultActionTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	a := &API{cfg: cfg, mux: http.NewServeMux(), csrf: http.NewCrossOriginProtection(), counted: newMetrics(cfg.Metrics),
		actions: map[string]auth.Action{}}
	a.routes()
	return a
}

// handler answers one request with a JSON object, or an error.
type handler func(*request) ([]byte, error)

// request is one request, authenticated.
type request struct {
	*http.Request
	ctx   context.Context // carries the principal (auth.NewContext)
	user  string          // the principal; "" with authentication off
	state State
	// shared is the snapshot's body the handler answered from, if any
	// (snapshot.body): write may send it compressed.
	shared *sharedBody
}

// route is one endpoint: its method, the RPC whose authorization rule it
// follows (auth.MethodAction), and its handler.
type route struct {
	method, rpc string
	h           handler
}

func (a *API) routes() {
	ns := "/" + nimbusv1.NimbusService_ServiceDesc.ServiceName + "/"
	get := func(rpc string, h handler) route { return route{http.MethodGet, ns + rpc, h} }
	post := func(rpc string, h handler) route { return route{http.MethodPost, ns + rpc, h} }
	for pattern, r := range map[string]route{
		"/api/v1/cluster/configuration":                          get("GetNimbusConfig", a.clusterConfiguration),
		"/api/v1/cluster/summary":                                get("GetClusterInfo", a.clusterSummary),
		"/api/v1/nimbus/summary":                                 get("GetClusterInfo", a.nimbusSummary),
		"/api/v1/supervisor/summary":                             get("GetClusterInfo", a.supervisorSummary),
		"/api/v1/supervisor":                                     get("GetClusterInfo", a.supervisor),
		"/api/v1/topology/summary":                               get("GetClusterInfo", a.topologySummary),
		"/api/v1/topology/{id}":                                  get("GetTopologyInfo", a.topology),
		"/api/v1/topology-workers/{id}":                          get("GetTopologyInfo", a.topologyWorkers),
		"/api/v1/topology/{id}/component/{component}":            get("GetTopologyInfo", a.component),
		"/api/v1/topology/{id}/metrics":                          get("GetTopologyInfo", a.metrics),
		"/api/v1/topology/{id}/activate":                         post("ActivateTopology", a.activate),
		"/api/v1/topology/{id}/deactivate":                       post("DeactivateTopology", a.deactivate),
		"/api/v1/topology/{id}/rebalance/{wait}":                 post("RebalanceTopology", a.rebalance),
		"/api/v1/topology/{id}/kill/{wait}":                      post("KillTopology", a.kill),
		"/api/v1/nimbus/handover":                                post("HandOver", a.handOver),
		"/api/v1/topology/{id}/profiling/restartworker/{worker}": post("RestartWorker", a.restartWorker),
		"GET /api/v1/topology/{id}/logconfig":                    get("GetTopologyInfo", a.logConfig),
		"POST /api/v1/topology/{id}/logconfig":                   post("SetLogConfig", a.setLogConfig),
		"/api/v1/blobstore":                                      get("ListBlobs", a.blobs),
		"/api/v1/blobstore/{key}":                                get("ListBlobs", a.blob),
	} {
		a.mux.Handle(pattern, a.counted.observe(pattern, a.serve(r)))
		if act, _, ok := auth.MethodAction(r.rpc); ok && r.method == http.MethodPost {
			a.actions[pattern] = act
		}
	}
	a.mux.Handle("/api/", a.counted.observe("other", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.fail(w, r, a.cfg.State(), fmt.Errorf("%w: %s: no such endpoint (README: REST API)", apierr.ErrNoSuchPath, r.URL.Path))
	})))
}

// ServeHTTP serves /api/v1 to requests whose Host names this nimbus
// (host.go), and audits every request that is not a read (audit.go).
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.audit(w, r, func(w http.ResponseWriter, r *http.Request) {
		if err := a.checkHost(r); err != nil {
			a.fail(w, r, a.cfg.State(), err)
			return
		}
		a.mux.ServeHTTP(w, r)
	})
}

// serve is the common path of every endpoint, in named steps: check the
// method, refuse cross-origin POSTs and JSONP, authenticate, authorize by
// the route's RPC, answer.
func (a *API) serve(rt route) http.Handler {
	act, topologyScoped, _ := auth.MethodAction(rt.rpc)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		noteTarget(r, targetOf(r))
		st := a.cfg.State()
		if r.Method != rt.method && !(rt.method == http.MethodGet && r.Method == http.MethodHead) {
			w.Header().Set("Allow", rt.method)
			a.fail(w, r, st, fmt.Errorf("%w: %s %s: use %s", apierr.ErrMethodNotAllowed, r.Method, r.URL.Path, rt.method))
			return
		}
		if err := a.csrf.Check(r); err != nil {
			a.fail(w, r, st, fmt.Errorf("%w: %v: a page of another site may not act here", apierr.ErrPermissionDenied, err))
			return
		}
		if r.URL.Query().Has("callback") {
			a.fail(w, r, st, validate.Invalid("callback", "JSONP is not served: it would let any web page read this API with its visitor's credentials"))
			return
		}
		user, err := a.cfg.Authz.Authenticate(r.TLS)
		if err != nil {
			// A browser has no client certificate: it needs the local proxy.
			a.fail(w, r, st, fmt.Errorf("%w; in a browser, run `stormctl ui` (a local proxy that uses your certificate) and open the URL it prints", err))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
		// The caller's address goes with its forwarded actions, for the
		// leader's audit line.
		ctx := auth.WithClient(auth.NewContext(r.Context(), user), r.RemoteAddr)
		req := &request{Request: r, ctx: ctx, user: user, state: st}
		// Actions are decided by the leader, as the caller; reads here.
		if rt.method == http.MethodGet && !topologyScoped {
			if err := a.cfg.Authz.Check(req.ctx, act, auth.Target{}); err != nil {
				a.fail(w, r, st, err)
				return
			}
		}
		body, err := rt.h(req)
		if err != nil {
			a.fail(w, r, st, err)
			return
		}
		var gz *sharedBody
		if req.shared != nil && sameBytes(body, req.shared.json) && len(body) >= minGzipBytes && acceptsGzip(r.Header.Get("Accept-Encoding")) {
			gz = req.shared
		}
		a.write(w, http.StatusOK, body, gz, st)
	})
}

// targetOf is what r's path or query names, for its audit line: a
// topology's id, or the nimbus a hand-over names.
func targetOf(r *http.Request) string {
	if id := r.PathValue("id"); id != "" {
		return id
	}
	return r.URL.Query().Get("to")
}

// fail answers err as Storm does, {"error": "<code> <reason>",
// "errorMessage": ...}, with the code apistatus.HTTPStatus gives it.
func (a *API) fail(w http.ResponseWriter, r *http.Request, st State, err error) {
	noteRefusal(r, err)
	code := apistatus.HTTPStatus(err)
	body, _ := json.Marshal(map[string]string{
		"error":        strconv.Itoa(code) + " " + http.StatusText(code),
		"errorMessage": apistatus.Message(err), // plain words, as stormctl prints them
	})
	// As for gRPC: refusals at info, callers without a certificate at
	// debug (probes would fill the log). A refused mutating request has its
	// audit line instead, unless the server failed (5xx: the reason is
	// for the operator).
	switch {
	case auditedOf(r) != nil && code < 500:
	case code == http.StatusUnauthorized:
		a.cfg.Log.Debug("http request refused", "method", r.Method, "path", r.URL.Path, "code", code, "error", err.Error())
	case code >= 500 || code == http.StatusForbidden:
		a.cfg.Log.Info("http request refused", "method", r.Method, "path", r.URL.Path, "code", code, "error", err.Error())
	}
	a.write(w, code, body, nil, st)
}

// write sends body, a JSON object, with the extras every answer carries
// appended to it. The body may be a snapshot's shared bytes: it is
// written as it is, never copied or changed. With gz (body is its JSON
// and the client accepts gzip) it sends gz's compressed form instead.
func (a *API) write(w http.ResponseWriter, code int, body []byte, gz *sharedBody, st State) {
	extras, _ := json.Marshal(struct {
		LeaderlessSeconds   int64    `json:"leaderlessSeconds"`
		CacheAgeMs          int64    `json:"cacheAgeMs"`
		LeadershipBlockedBy []string `json:"leadershipBlockedBy"`
	}{int64(st.LeaderlessFor / time.Second), st.CacheAge.Milliseconds(), a.blockedBy(st)})
	head, sep := opened(body)
	parts := [][]byte{head, sep, extras[1:]}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Vary", "Accept-Encoding")
	if gz != nil {
		parts = [][]byte{gzipAnswer(gz.head(), extras[1:])}
		h.Set("Content-Encoding", "gzip")
	}
	length := 0
	for _, part := range parts {
		length += len(part)
	}
	h.Set("Content-Length", strconv.Itoa(length))
	w.WriteHeader(code)
	for _, part := range parts {
		if _, err := w.Write(part); err != nil {
			return // the client went away
		}
	}
}

// opened is a JSON object without its closing "}", and the separator
// that members appended after it need: "," unless it has none.
func opened(body []byte) (head, sep []byte) {
	head = bytes.TrimSpace(body)
	head, sep = head[:len(head)-1], []byte(",")
	if len(head) == 1 { // "{": no members
		sep = nil
	}
	return head, sep
}

// sameBytes reports whether a and b are the same bytes in memory, not
// merely equal: a handler may answer with a shared body joined to more.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// join merges the members of two JSON objects into one object.
func join(a, b []byte) []byte {
	a = bytes.TrimSpace(a)
	out := make([]byte, 0, len(a)+len(b))
	out = append(out, a[:len(a)-1]...)
	if len(a) > 2 {
		out = append(out, ',')
	}
	return append(out, b[1:]...)
}
