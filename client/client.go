package client

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/peer"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// Client talks to a Nimbus-HA cluster. It is safe for concurrent use.
// New connects to nothing; connections are made on first use, one per
// address, and kept until Close.
type Client struct {
	opts options
	log  *slog.Logger

	mu     sync.Mutex
	addrs  []string // seeds, then addresses learned from redirects and GetLeader
	next   int      // index in addrs where reads start: the last that answered
	leader string   // cached leader address; "" when unknown
	conns  map[string]*conn
	closed bool
}

// conn is the cached connection to one address.
type conn struct {
	cc  *grpc.ClientConn
	api nimbusv1.NimbusServiceClient

	mu          sync.Mutex
	lastDialErr error // why the last dial or TLS handshake failed; nil once one succeeds
}

// DefaultPort is the port of a seed given without one: nimbus.grpc.port's
// default (configs.DefaultNimbusGRPCPort, which a test keeps equal: the SDK
// does not import configs), as in Storm, where a nimbus.seeds entry is a
// host.
const DefaultPort = 6627

// New returns a Client for the cluster reachable through seeds, each a
// host[:port] (DefaultPort when it has none; an IPv6 address with a port
// in brackets). At least one seed is required; an invalid one is named in
// the error.
func New(seeds []string, opts ...Option) (*Client, error) {
	if len(seeds) == 0 {
		return nil, errors.New("client: no seeds: need at least one nimbus host[:port]")
	}
	var addrs []string
	for _, s := range seeds {
		addr, err := seedAddr(s)
		if err != nil {
			return nil, fmt.Errorf("client: seed %q: %w", s, err)
		}
		if !slices.Contains(addrs, addr) {
			addrs = append(addrs, addr)
		}
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	return &Client{
		opts:  o,
		log:   o.logger.With("component", "client"),
		addrs: addrs,
		conns: make(map[string]*conn),
	}, nil
}

// seedAddr returns seed as host:port, with DefaultPort when it names a
// host alone ("nimbus-1", "10.0.0.1", "::1", "[::1]").
func seedAddr(seed string) (string, error) {
	host := seed
	if h, ok := strings.CutPrefix(seed, "["); ok && strings.HasSuffix(h, "]") {
		host = strings.TrimSuffix(h, "]")
	}
	if host != "" && (!strings.Contains(host, ":") || net.ParseIP(host) != nil) {
		seed = net.JoinHostPort(host, strconv.Itoa(DefaultPort))
	}
	return seed, validateAddr(seed)
}

func validateAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("want host[:port]")
	}
	if host == "" {
		return errors.New("empty host")
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("port %q is not in 1-65535", port)
	}
	return nil
}

// Close closes every connection. Calls in flight fail; later calls return
// ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var errs []error
	for addr, cn := range c.conns {
		if err := cn.cc.Close(); err != nil {
			errs = append(errs, fmt.Errorf("client: closing %s: %w", addr, err))
		}
	}
	clear(c.conns)
	return errors.Join(errs...)
}

// conn returns the connection to addr, creating it on first use.
func (c *Client) conn(addr string) (*conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if cn, ok := c.conns[addr]; ok {
		return cn, nil
	}
	cn := &conn{}
	dialer := &net.Dialer{Timeout: c.opts.dialTimeout}
	creds := c.opts.creds
	if creds == nil {
		creds = insecure.NewCredentials()
	}
	opts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(&recordingCredentials{TransportCredentials: creds, cn: cn}),
		// Our dialer records why a dial failed, so errors can say
		// "connection refused" rather than a transport message.
		grpc.WithContextDialer(func(ctx context.Context, target string) (net.Conn, error) {
			nc, err := dialer.DialContext(ctx, "tcp", target)
			cn.setDialErr(err)
			if err != nil {
				return nil, err
			}
			return &firstWords{Conn: nc, cn: cn}, nil
		}),
		// gRPC's default reconnect backoff grows to 2 minutes; a nimbus
		// that restarts should be reachable again within our retries.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
			MinConnectTimeout: c.opts.dialTimeout,
		}),
	}, c.opts.dialOptions...)
	// passthrough: the dialer resolves the name, so a DNS failure is a
	// dial error with a plain message too.
	cc, err := grpc.NewClient("passthrough:///"+addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("client: %s: %w", addr, err)
	}
	cn.cc, cn.api = cc, nimbusv1.NewNimbusServiceClient(cc)
	c.conns[addr] = cn
	return cn, nil
}

func (cn *conn) setDialErr(err error) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	cn.lastDialErr = err
}

func (cn *conn) dialErr() error {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.lastDialErr
}

// learn adds addr to the addresses reads may try.
func (c *Client) learn(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(c.addrs, addr) {
		c.addrs = append(c.addrs, addr)
	}
}

// readOrder returns the addresses to try, starting with the last that
// answered.
func (c *Client) readOrder() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.addrs)
	order := make([]string, 0, n)
	for i := range n {
		order = append(order, c.addrs[(c.next+i)%n])
	}
	return order
}

func (c *Client) answered(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i := slices.Index(c.addrs, addr); i >= 0 {
		c.next = i
	}
}

// unaryCall is one RPC on one connection.
type unaryCall[Resp any] func(ctx context.Context, api nimbusv1.NimbusServiceClient, opts ...grpc.CallOption) (Resp, error)

// callAt makes one attempt of call at addr, bounded by the call timeout.
// On failure it also returns what went wrong there, for error messages.
func callAt[Resp any](ctx context.Context, c *Client, addr string, call unaryCall[Resp]) (Resp, SeedFailure, error) {
	var zero Resp
	cn, err := c.conn(addr)
	if err != nil {
		return zero, SeedFailure{Addr: addr, Err: err}, err
	}
	if c.opts.callTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.callTimeout)
		defer cancel()
	}
	var p peer.Peer
	resp, err := call(ctx, cn.api, grpc.Peer(&p))
	if err == nil {
		return resp, SeedFailure{}, nil
	}
	f := SeedFailure{Addr: addr, Err: err}
	if p.Addr == nil { // no stream was opened: the connection failed
		f.Dial = cn.dialErr()
	}
	return zero, f, err
}

// readAny tries call at each known address in turn, starting with the last
// that answered, and returns the first answer. It moves on only when a
// nimbus is unreachable, Unavailable or slow; any other status is the
// answer.
func readAny[Resp any](ctx context.Context, c *Client, rpc string, call unaryCall[Resp]) (Resp, error) {
	var zero Resp
	var failures []SeedFailure
	for _, addr := range c.readOrder() {
		resp, f, err := callAt(ctx, c, addr, call)
		if err == nil {
			c.answered(addr)
			return resp, nil
		}
		if !transient(err, ctx.Err() != nil) {
			return zero, err
		}
		c.log.Debug("nimbus did not answer; trying the next", "rpc", rpc, "addr", addr, "err", err)
		failures = append(failures, f)
	}
	return zero, &NoSeedAnsweredError{Failures: failures}
}

// GetLeader returns the leader's summary from any nimbus. It blocks until
// a nimbus answers or all have failed; when there is no leader, every
// nimbus answers Unavailable and the error is a *NoSeedAnsweredError.
func (c *Client) GetLeader(ctx context.Context) (*nimbusv1.GetLeaderResponse, error) {
	resp, err := readAny(ctx, c, "GetLeader", func(ctx context.Context, api nimbusv1.NimbusServiceClient, opts ...grpc.CallOption) (*nimbusv1.GetLeaderResponse, error) {
		return api.GetLeader(ctx, &nimbusv1.GetLeaderRequest{}, opts...)
	})
	if err != nil {
		return nil, err
	}
	if l := resp.GetLeader(); l.GetHost() != "" && l.GetPort() > 0 {
		addr := net.JoinHostPort(l.GetHost(), strconv.Itoa(int(l.GetPort())))
		c.learn(addr)
		c.setLeader(addr)
	}
	return resp, nil
}

// GetClusterInfo returns the cluster summary from any nimbus.
func (c *Client) GetClusterInfo(ctx context.Context, options ...ClusterInfoOption) (*nimbusv1.GetClusterInfoResponse, error) {
	req := &nimbusv1.GetClusterInfoRequest{}
	for _, o := range options {
		o(req)
	}
	return readAny(ctx, c, "GetClusterInfo", func(ctx context.Context, api nimbusv1.NimbusServiceClient, opts ...grpc.CallOption) (*nimbusv1.GetClusterInfoResponse, error) {
		return api.GetClusterInfo(ctx, req, opts...)
	})
}

// TopologyInfoOption adds to a GetTopologyInfo request.
type TopologyInfoOption func(*nimbusv1.GetTopologyInfoRequest)

// WithLogTail asks for each worker's log tail: the last lines a worker
// that is not running printed, unredacted. With authorization on, only a
// caller who may read the topology's conf gets them (PermissionDenied
// otherwise).
func WithLogTail() TopologyInfoOption {
	return func(r *nimbusv1.GetTopologyInfoRequest) { r.IncludeLogTail = true }
}

// WithStatsWindow asks for the per-stream and per-worker counts of the
// answer's stats in window, as Storm names it: "600", "10800", "86400" or
// ":all-time" (the default). Another value is InvalidArgument.
func WithStatsWindow(window string) TopologyInfoOption {
	return func(r *nimbusv1.GetTopologyInfoRequest) { r.Window = window }
}

// LinearizableTopologyInfo asks for a status at least as new as every write
// acknowledged before the request, at the cost of a ZooKeeper sync and a
// read per topology on the answering nimbus.
func LinearizableTopologyInfo() TopologyInfoOption {
	return func(r *nimbusv1.GetTopologyInfoRequest) { r.Linearizable = true }
}

// ClusterInfoOption adds to a GetClusterInfo request.
type ClusterInfoOption func(*nimbusv1.GetClusterInfoRequest)

// LinearizableClusterInfo asks for a summary that shows every write
// acknowledged before the request, at the cost of a ZooKeeper sync and a
// read per topology on the answering nimbus.
func LinearizableClusterInfo() ClusterInfoOption {
	return func(r *nimbusv1.GetClusterInfoRequest) { r.Linearizable = true }
}

// WithoutNimbuses leaves the nimbuses out of the summary.
func WithoutNimbuses() ClusterInfoOption {
	return func(r *nimbusv1.GetClusterInfoRequest) { r.OmitNimbuses = true }
}

// WithoutSupervisors leaves the supervisors out of the summary.
func WithoutSupervisors() ClusterInfoOption {
	return func(r *nimbusv1.GetClusterInfoRequest) { r.OmitSupervisors = true }
}

// WithoutTopologies leaves the topologies out of the summary. With the
// other two Without options the answer is the cluster's counts, its
// eligible standbys and the topologies blocking leadership or LOST.
func WithoutTopologies() ClusterInfoOption {
	return func(r *nimbusv1.GetClusterInfoRequest) { r.OmitTopologies = true }
}

// OnlyTopologies keeps only the topologies with these names or ids.
func OnlyTopologies(namesOrIDs ...string) ClusterInfoOption {
	return func(r *nimbusv1.GetClusterInfoRequest) { r.Topologies = append(r.Topologies, namesOrIDs...) }
}

// OnlySupervisors keeps only the supervisors with these ids or hosts.
func OnlySupervisors(idsOrHosts ...string) ClusterInfoOption {
	return func(r *nimbusv1.GetClusterInfoRequest) { r.Supervisors = append(r.Supervisors, idsOrHosts...) }
}

// PageSize asks for at most n topologies and n supervisors; the answer's
// next_page_token asks for the next page (see ClusterInfoPages).
func PageSize(n int) ClusterInfoOption {
	return func(r *nimbusv1.GetClusterInfoRequest) { r.PageSize = int32(n) }
}

// PageToken continues after the page whose next_page_token it is.
func PageToken(token string) ClusterInfoOption {
	return func(r *nimbusv1.GetClusterInfoRequest) { r.PageToken = token }
}

// ClusterInfoPages calls GetClusterInfo for one page after another, of at
// most pageSize topologies and pageSize supervisors each, until the last:
// a large cluster's summary without one multi-megabyte answer. Each page
// may come from another nimbus; a topology or supervisor created or
// removed meanwhile may be missed or shown, none twice. The sequence ends
// after the first error.
func (c *Client) ClusterInfoPages(ctx context.Context, pageSize int, options ...ClusterInfoOption) iter.Seq2[*nimbusv1.GetClusterInfoResponse, error] {
	return func(yield func(*nimbusv1.GetClusterInfoResponse, error) bool) {
		token := ""
		for {
			resp, err := c.GetClusterInfo(ctx, append(slices.Clip(options), PageSize(pageSize), PageToken(token))...)
			if !yield(resp, err) || err != nil {
				return
			}
			if token = resp.GetNextPageToken(); token == "" {
				return
			}
		}
	}
}

// GetTopologyInfo returns the named topology's status, assignments,
// workers and replicas from any nimbus. An unknown name is NotFound.
func (c *Client) GetTopologyInfo(ctx context.Context, name string, options ...TopologyInfoOption) (*nimbusv1.GetTopologyInfoResponse, error) {
	req := &nimbusv1.GetTopologyInfoRequest{Name: name}
	for _, o := range options {
		o(req)
	}
	return readAny(ctx, c, "GetTopologyInfo", func(ctx context.Context, api nimbusv1.NimbusServiceClient, opts ...grpc.CallOption) (*nimbusv1.GetTopologyInfoResponse, error) {
		return api.GetTopologyInfo(ctx, req, opts...)
	})
}

// GetTopologyConf returns the named topology's effective conf (its own
// conf over the nimbus's topology.* values, secrets redacted) from any
// nimbus that holds its code. With authorization on, only a caller who may
// read the topology's conf gets it (PermissionDenied otherwise).
func (c *Client) GetTopologyConf(ctx context.Context, name string) (*nimbusv1.GetTopologyConfResponse, error) {
	req := &nimbusv1.GetTopologyConfRequest{Name: name}
	return readAny(ctx, c, "GetTopologyConf", func(ctx context.Context, api nimbusv1.NimbusServiceClient, opts ...grpc.CallOption) (*nimbusv1.GetTopologyConfResponse, error) {
		return api.GetTopologyConf(ctx, req, opts...)
	})
}

// GetNimbusConfig returns the effective configuration of the nimbus the
// client reaches first (the response names it; give the client one seed
// to ask a given nimbus): every key, its value and where it came from,
// secrets redacted. With authorization on, only nimbus.admins get it
// (PermissionDenied otherwise).
func (c *Client) GetNimbusConfig(ctx context.Context) (*nimbusv1.GetNimbusConfigResponse, error) {
	return readAny(ctx, c, "GetNimbusConfig", func(ctx context.Context, api nimbusv1.NimbusServiceClient, opts ...grpc.CallOption) (*nimbusv1.GetNimbusConfigResponse, error) {
		return api.GetNimbusConfig(ctx, &nimbusv1.GetNimbusConfigRequest{}, opts...)
	})
}

// ForgetTopology removes a topology marked LOST (its code held by no
// nimbus and no supervisor), by name or id, with reason for the audit log.
// Any nimbus answers, with or without a leader: it is not sent to the
// leader, and NOT_LEADER is never followed. Needs nimbus.admins.
func (c *Client) ForgetTopology(ctx context.Context, name, reason string) (*nimbusv1.ForgetTopologyResponse, error) {
	return readAny(ctx, c, "ForgetTopology", func(ctx context.Context, api nimbusv1.NimbusServiceClient, opts ...grpc.CallOption) (*nimbusv1.ForgetTopologyResponse, error) {
		return api.ForgetTopology(ctx, &nimbusv1.ForgetTopologyRequest{Name: name, Reason: reason}, opts...)
	})
}

// HandOver asks the leader to hand leadership to the nimbus at to
// (host:port), or to the next one that holds every live topology's code
// when to is "". It answers once the new leader acts, with how long the
// cluster was without one. Needs nimbus.admins. NOT_LEADER is followed.
// Naming a nimbus makes the call idempotent (naming the leader changes
// nothing), so it is retried like every leader-only call; "the next one"
// is not, so a failure that may have reached the leader is returned, not
// retried: GetLeader tells what happened.
func (c *Client) HandOver(ctx context.Context, to string) (*nimbusv1.HandOverResponse, error) {
	call := func(ctx context.Context, api nimbusv1.NimbusServiceClient, opts ...grpc.CallOption) (*nimbusv1.HandOverResponse, error) {
		return api.HandOver(ctx, &nimbusv1.HandOverRequest{To: to}, opts...)
	}
	if to != "" {
		return callLeader(ctx, c, "HandOver", call)
	}
	return callLeaderOnce(ctx, c, "HandOver", call)
}
