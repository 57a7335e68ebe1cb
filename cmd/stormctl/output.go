package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// writeJSON writes msg as one indented JSON document in stormctl's words
// (jsonMessage): numbers as numbers, bytes in hex, enum values as the
// tables' words.
func writeJSON(w io.Writer, msg proto.Message) error {
	v, err := jsonMessage(msg)
	if err != nil {
		return err
	}
	return writeJSONValue(w, v)
}

// writeJSONList writes {"key": [msgs...]}, each message as writeJSON
// would, as one document: the part of a response a command shows.
func writeJSONList[M proto.Message](w io.Writer, key string, msgs []M) error {
	list := make([]any, len(msgs))
	for i, m := range msgs {
		v, err := jsonMessage(m)
		if err != nil {
			return err
		}
		list[i] = v
	}
	return writeJSONValue(w, object{{key, list}})
}

// writeJSONValue writes v as one indented document.
func writeJSONValue(w io.Writer, v any) error {
	b, err := marshalJSON(v)
	if err != nil {
		return err
	}
	return writeIndented(w, b)
}

// writeIndented re-indents a compact document, so every command's JSON
// looks alike.
func writeIndented(w io.Writer, compact []byte) error {
	var out bytes.Buffer
	if err := json.Indent(&out, compact, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err := w.Write(out.Bytes())
	return err
}

// table writes rows under header, columns aligned, or "(none)".
func table(w io.Writer, header []string, rows [][]string) error {
	if len(rows) == 0 {
		_, err := io.WriteString(w, "(none)\n")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

func writeNimbuses(w io.Writer, ns []*nimbusv1.NimbusSummary) error {
	return table(w, nimbusHeader, nimbusRows(ns))
}

var nimbusHeader = []string{"HOST", "PORT", "LEADER", "EPOCH", "ELIGIBLE", "UPTIME", "VERSION", "RELEASE"}

// nimbusRows are the rows of nimbuses' table, one per nimbus of ns.
func nimbusRows(ns []*nimbusv1.NimbusSummary) [][]string {
	rows := make([][]string, 0, len(ns))
	for _, n := range ns {
		leader, epoch := "no", "-"
		if n.GetIsLeader() {
			leader, epoch = "yes", strconv.FormatInt(n.GetEpoch(), 10)
		}
		rows = append(rows, []string{
			n.GetHost(), strconv.Itoa(int(n.GetPort())), leader, epoch, eligible(n),
			uptime(n.GetUptimeSecs()), orDash(n.GetVersion()), orDash(n.GetRelease()),
		})
	}
	return rows
}

// eligible says whether a nimbus may lead: "yes" when it holds all code,
// "no (missing N)" when it lacks N topologies' code.
func eligible(n *nimbusv1.NimbusSummary) string {
	if missing := len(n.GetMissingTopologyIds()); missing > 0 {
		return fmt.Sprintf("no (missing %d)", missing)
	}
	if n.GetHoldsAllCode() {
		return "yes"
	}
	return "no"
}

// statusName is "active" for TOPOLOGY_STATUS_ACTIVE: the word JSON uses
// too (enumWord).
func statusName(s clusterv1.TopologyStatus) string {
	if ev := s.Descriptor().Values().ByNumber(s.Number()); ev != nil {
		return enumWord(ev)
	}
	return strconv.Itoa(int(s))
}

// fields writes "key: value" lines, the values aligned.
func fields(w io.Writer, kvs [][2]string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, kv := range kvs {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[0], kv[1])
	}
	return tw.Flush()
}

// hostPort is "host:port", or "-" when the host is unknown.
func hostPort(host string, port int32) string {
	if host == "" {
		return "-"
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// uptime renders seconds with the two largest units, as "3m12s", "5h3m" or
// "2d5h": precise when it is short, readable when it is long.
func uptime(secs int64) string {
	if secs < 0 {
		return "-"
	}
	d, h, m, s := secs/86400, secs/3600%24, secs/60%60, secs%60
	switch {
	case d > 0:
		return fmt.Sprintf("%dd%dh", d, h)
	case h > 0:
		return fmt.Sprintf("%dh%dm", h, m)
	case m > 0:
		return fmt.Sprintf("%dm%ds", m, s)
	default:
		return fmt.Sprintf("%ds", s)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeTopologyInfo writes a header block, then the replicas and the
// executors' placement.
func writeTopologyInfo(w io.Writer, info *nimbusv1.GetTopologyInfoResponse) error {
	t := info.GetTopology()
	digest := hex.EncodeToString(info.GetCodeMetaDigest())
	if len(digest) > 16 {
		digest = digest[:16]
	}
	components := make([]string, 0, len(info.GetComponentParallelism()))
	for _, id := range slices.Sorted(maps.Keys(info.GetComponentParallelism())) {
		components = append(components, fmt.Sprintf("%s=%d", id, info.GetComponentParallelism()[id]))
	}
	err := fields(w, [][2]string{
		{"name", t.GetName()},
		{"id", t.GetId()},
		{"status", topologyStatus(t)},
		{"owner", orDash(t.GetOwner())},
		{"workers", strconv.Itoa(int(t.GetNumWorkers()))},
		{"executors", strconv.Itoa(int(t.GetNumExecutors()))},
		{"components", orDash(strings.Join(components, ", "))},
		{"uptime", uptime(t.GetUptimeSecs())},
		{"replication count", strconv.Itoa(int(t.GetReplicationCount()))},
		{"digest", orDash(digest)},
	})
	if err != nil {
		return err
	}

	replicas := make([][]string, 0, len(info.GetReplicas()))
	for _, r := range info.GetReplicas() {
		replicas = append(replicas, []string{hostPort(r.GetHost(), r.GetPort())})
	}
	if _, err := io.WriteString(w, "\nREPLICAS\n"); err != nil {
		return err
	}
	if err := table(w, []string{"HOST:PORT"}, replicas); err != nil {
		return err
	}
	if storage := info.GetStorage(); len(storage) > 0 {
		keys := slices.Sorted(maps.Keys(storage))
		rows := make([][]string, 0, len(keys))
		for _, k := range keys {
			rows = append(rows, []string{k, storage[k]})
		}
		if _, err := io.WriteString(w, "\nSTORAGE\n"); err != nil {
			return err
		}
		if err := table(w, []string{"KEY", "VALUE"}, rows); err != nil {
			return err
		}
	}

	// By component, then task: the server's order is not promised.
	execs := slices.Clone(info.GetExecutors())
	slices.SortStableFunc(execs, func(a, b *nimbusv1.ExecutorSummary) int {
		if c := strings.Compare(a.GetExecutor().GetComponentId(), b.GetExecutor().GetComponentId()); c != 0 {
			return c
		}
		return int(a.GetExecutor().GetTaskStart()) - int(b.GetExecutor().GetTaskStart())
	})
	rows := make([][]string, 0, len(execs))
	for _, e := range execs {
		x := e.GetExecutor()
		tasks := strconv.Itoa(int(x.GetTaskStart()))
		if x.GetTaskEnd() != x.GetTaskStart() {
			tasks += "-" + strconv.Itoa(int(x.GetTaskEnd()))
		}
		rows = append(rows, []string{x.GetComponentId(), tasks, hostPort(e.GetHost(), e.GetPort())})
	}
	if _, err := io.WriteString(w, "\nEXECUTORS\n"); err != nil {
		return err
	}
	return table(w, []string{"COMPONENT", "TASKS", "HOST:PORT"}, rows)
}
