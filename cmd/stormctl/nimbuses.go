package main

import (
	"io"
	"net"
	"strconv"

	"github.com/nimbusha/nimbus/configs"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// writeNimbusesAndOffline is the nimbuses table: the registered nimbuses,
// then each seed stormctl was given that is not registered, as "offline"
// (a stopped nimbus), as the REST API and the UI list it.
func (g *globals) writeNimbusesAndOffline(w io.Writer, ns []*nimbusv1.NimbusSummary) error {
	rows := nimbusRows(ns)
	for _, seed := range offlineSeeds(g.seedsUsed, ns) {
		host, port, _ := net.SplitHostPort(seed)
		rows = append(rows, []string{host, port, "offline", "-", "no", "-", "-", "-"})
	}
	return table(w, nimbusHeader, rows)
}

// offlineSeeds are the seeds (host or host:port; the port defaults to
// nimbus.grpc.port's default) that name no nimbus of ns, as host:port,
// each once, in the seeds' order.
func offlineSeeds(seeds []string, ns []*nimbusv1.NimbusSummary) []string {
	registered := map[string]bool{}
	for _, n := range ns {
		registered[net.JoinHostPort(n.GetHost(), strconv.Itoa(int(n.GetPort())))] = true
	}
	var out []string
	for _, seed := range seeds {
		addr := seed
		if _, _, err := net.SplitHostPort(seed); err != nil {
			addr = net.JoinHostPort(seed, strconv.Itoa(configs.DefaultNimbusGRPCPort))
		}
		if !registered[addr] {
			registered[addr] = true
			out = append(out, addr)
		}
	}
	return out
}
