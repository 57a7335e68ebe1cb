package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

var jsonOptions = protojson.MarshalOptions{EmitUnpopulated: true}

// writeJSON writes msg in protobuf's JSON mapping as one indented
// document. protojson varies its whitespace on purpose; re-indenting with
// encoding/json makes the output stable for scripts and diffs.
func writeJSON(w io.Writer, msg proto.Message) error {
	b, err := jsonOptions.Marshal(msg)
	if err != nil {
		return err
	}
	return writeIndented(w, b)
}

// writeJSONList writes {"key": [msgs...]}, each message in protobuf's JSON
// mapping, as one document: the part of a response a command shows.
func writeJSONList[M proto.Message](w io.Writer, key string, msgs []M) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "{%q:[", key)
	for i, m := range msgs {
		if i > 0 {
			b.WriteByte(',')
		}
		mb, err := jsonOptions.Marshal(m)
		if err != nil {
			return err
		}
		b.Write(mb)
	}
	b.WriteString("]}")
	return writeIndented(w, b.Bytes())
}

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
	rows := make([][]string, 0, len(ns))
	for _, n := range ns {
		leader, epoch := "no", "-"
		if n.GetIsLeader() {
			leader, epoch = "yes", strconv.FormatInt(n.GetEpoch(), 10)
		}
		rows = append(rows, []string{
			n.GetHost(), strconv.Itoa(int(n.GetPort())), leader, epoch,
			uptime(n.GetUptimeSecs()), orDash(n.GetVersion()),
		})
	}
	return table(w, []string{"HOST", "PORT", "LEADER", "EPOCH", "UPTIME", "VERSION"}, rows)
}

func writeSupervisors(w io.Writer, ss []*nimbusv1.SupervisorSummary) error {
	rows := make([][]string, 0, len(ss))
	for _, s := range ss {
		rows = append(rows, []string{
			s.GetSupervisorId(), s.GetHost(), uptime(s.GetUptimeSecs()),
			strconv.Itoa(int(s.GetNumWorkers())), strconv.Itoa(int(s.GetNumUsedWorkers())),
			orDash(s.GetVersion()),
		})
	}
	return table(w, []string{"ID", "HOST", "UPTIME", "SLOTS", "USED", "VERSION"}, rows)
}

func writeTopologies(w io.Writer, ts []*nimbusv1.TopologySummary) error {
	rows := make([][]string, 0, len(ts))
	for _, t := range ts {
		rows = append(rows, []string{
			t.GetName(), t.GetId(), strings.TrimPrefix(t.GetStatus().String(), "TOPOLOGY_STATUS_"),
			orDash(t.GetOwner()), strconv.Itoa(int(t.GetNumWorkers())), strconv.Itoa(int(t.GetNumExecutors())),
			strconv.Itoa(int(t.GetReplicationCount())), uptime(t.GetUptimeSecs()),
		})
	}
	return table(w, []string{"NAME", "ID", "STATUS", "OWNER", "WORKERS", "EXECUTORS", "REPLICAS", "UPTIME"}, rows)
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
