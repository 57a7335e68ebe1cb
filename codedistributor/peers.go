package codedistributor

import (
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// Peers holds one gRPC connection per node this one downloads from or
// asks about leadership.
type Peers struct {
	creds credentials.TransportCredentials

	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

// NewPeers returns an empty pool whose connections use creds: TLS with this
// node's certificate, which identifies it to its peers
// (certs.Reloader.ClientCredentials), or plaintext when creds is nil.
func NewPeers(creds credentials.TransportCredentials) *Peers {
	if creds == nil {
		creds = insecure.NewCredentials()
	}
	return &Peers{creds: creds, conns: map[string]*grpc.ClientConn{}}
}

// Code returns the CodeService at addr (host:port).
func (p *Peers) Code(addr string) (nimbusv1.CodeServiceClient, error) {
	cc, err := p.conn(addr)
	if err != nil {
		return nil, err
	}
	return nimbusv1.NewCodeServiceClient(cc), nil
}

// Health returns the health service at addr (host:port), over the same
// connection as Code: a nimbus asks another whether it leads yet.
func (p *Peers) Health(addr string) (healthpb.HealthClient, error) {
	cc, err := p.conn(addr)
	if err != nil {
		return nil, err
	}
	return healthpb.NewHealthClient(cc), nil
}

func (p *Peers) conn(addr string) (*grpc.ClientConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cc, ok := p.conns[addr]
	if !ok {
		var err error
		cc, err = grpc.NewClient(addr, grpc.WithTransportCredentials(p.creds))
		if err != nil {
			return nil, err
		}
		p.conns[addr] = cc
	}
	return cc, nil
}

// Transient returns the CodeService at addr over a connection of its own,
// which release closes: for asking many nodes once (AskAll), where
// keeping a connection to each would hold thousands.
func (p *Peers) Transient(addr string) (nimbusv1.CodeServiceClient, func(), error) {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(p.creds))
	if err != nil {
		return nil, nil, err
	}
	return nimbusv1.NewCodeServiceClient(cc), func() { cc.Close() }, nil
}

// Close closes every connection.
func (p *Peers) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, cc := range p.conns {
		cc.Close()
	}
	p.conns = map[string]*grpc.ClientConn{}
}
