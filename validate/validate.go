package validate

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/stats"
)

// Each check returns nil or the first problem found, as an *Error naming
// the field. Map keys are checked in sorted order so that the first problem
// is the same on every call.

// Error is a request field that fails validation. Nothing has been
// written when one is returned.
type Error struct {
	Field  string // e.g. "spec.components[1].parallelism"
	Reason string // e.g. "must be at least 1, got 0"
}

func (e *Error) Error() string { return e.Field + ": " + e.Reason }

// Invalid returns an *Error for field, its reason formatted as by fmt.
func Invalid(field, format string, args ...any) error {
	return &Error{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Limits. They bound what one request can make the leader store in ZooKeeper
// and what the scheduler has to place.
const (
	maxTopologyNameLen   = 128
	maxComponentIDLen    = 128
	maxNumWorkers        = 10000
	maxComponents        = 10000
	maxParallelism       = 10000
	maxExecutors         = 100000
	maxWorkerCommandArgs = 256
	maxWorkerCommandArg  = 4096
	maxConfigEntries     = 1000
	maxConfigKeyLen      = 256
	maxConfigValueLen    = 65536
	maxOwnerLen          = 128
	maxWaitSecs          = 86400
	maxCodeFileNameLen   = 255
	maxShownValueLen     = 64
)

// Rules as error messages state them.
const (
	topologyNameRule      = `must match [A-Za-z0-9_.-]{1,128} and not contain ".."`
	componentIDRule       = `must match [A-Za-z0-9_.:-]{1,128}`
	codeFileNameRule      = `must match [A-Za-z0-9_.-]{1,255} and not be "." or ".."`
	topologyIDShape       = `must be <name>-<counter>-<launch-unix-secs>`
	topologyIDNumberRule  = `must be decimal digits without a sign`
	initialStatusAccepted = "INITIAL_STATUS_UNSPECIFIED, INITIAL_STATUS_ACTIVE or INITIAL_STATUS_INACTIVE"
)

// TopologyName checks a topology name. Names become directory names
// (and the prefix of topology ids), so they must never escape a directory.
func TopologyName(field, name string) error {
	if reason := topologyNameProblem(name); reason != "" {
		return Invalid(field, "%s", reason)
	}
	return nil
}

// topologyNameProblem returns why name is not a valid topology name, or "".
func topologyNameProblem(name string) string {
	if name == "." {
		return fmt.Sprintf("must not be \".\", got %s", showValue(name))
	}
	if len(name) == 0 || len(name) > maxTopologyNameLen ||
		!onlyBytes(name, isNameByte) || strings.Contains(name, "..") {
		return fmt.Sprintf("%s, got %s", topologyNameRule, showValue(name))
	}
	return ""
}

// Spec checks the spec that opens a submission.
func Spec(spec *nimbusv1.TopologySpec) error {
	if spec == nil {
		return Invalid("spec", "must be set")
	}
	if err := TopologyName("spec.name", spec.GetName()); err != nil {
		return err
	}
	if err := checkNumWorkers(spec.GetNumWorkers(), spec.GetConfig()); err != nil {
		return err
	}
	if err := checkComponents(spec.GetComponents()); err != nil {
		return err
	}
	if err := WorkerCommand(spec.GetWorkerCommand()); err != nil {
		return err
	}
	if err := checkConfig(spec.GetConfig()); err != nil {
		return err
	}
	if err := checkOwner("spec.owner", spec.GetOwner()); err != nil {
		return err
	}
	if s := spec.GetInitialStatus(); nimbusv1.InitialStatus_name[int32(s)] == "" {
		return Invalid("spec.initial_status", "must be %s, got %d", initialStatusAccepted, int32(s))
	}
	if n := spec.GetArtifactBytes(); n < 0 {
		return Invalid("spec.artifact_bytes", "must not be negative (0: not declared), got %d", n)
	}
	return nil
}

func checkComponents(components []*nimbusv1.ComponentSpec) error {
	switch {
	case len(components) == 0:
		return Invalid("spec.components", "must have at least one component")
	case len(components) > maxComponents:
		return Invalid("spec.components", "must have at most %d components, got %d", maxComponents, len(components))
	}
	first := make(map[string]int, len(components)) // id -> index of its first use
	var executors int64
	for i, c := range components {
		field := fmt.Sprintf("spec.components[%d]", i)
		if c == nil {
			return Invalid(field, "must be set")
		}
		if reason := componentIDProblem(c.GetId()); reason != "" {
			return Invalid(field+".id", "%s", reason)
		}
		if j, dup := first[c.GetId()]; dup {
			return Invalid(field+".id", "duplicates spec.components[%d].id %s", j, showValue(c.GetId()))
		}
		first[c.GetId()] = i
		if err := checkParallelism(field+".parallelism", c.GetParallelism()); err != nil {
			return err
		}
		executors += int64(c.GetParallelism())
	}
	if executors > maxExecutors {
		return Invalid("spec.components", "total parallelism (executors) must be at most %d, got %d", maxExecutors, executors)
	}
	return nil
}

// componentIDProblem returns why id is not a valid component id, or "".
func componentIDProblem(id string) string {
	if len(id) == 0 || len(id) > maxComponentIDLen || !onlyBytes(id, isComponentIDByte) {
		return fmt.Sprintf("%s, got %s", componentIDRule, showValue(id))
	}
	return ""
}

func checkParallelism(field string, p int32) error {
	if p < 1 || p > maxParallelism {
		return Invalid(field, "must be between 1 and %d, got %d", maxParallelism, p)
	}
	return nil
}

func checkConfig(config map[string]string) error {
	if len(config) > maxConfigEntries {
		return Invalid("spec.config", "must have at most %d entries, got %d", maxConfigEntries, len(config))
	}
	for _, k := range slices.Sorted(maps.Keys(config)) {
		field := "spec.config[" + showValue(k) + "]"
		switch {
		case len(k) == 0 || len(k) > maxConfigKeyLen:
			return Invalid(field, "key must be 1 to %d bytes, got %d", maxConfigKeyLen, len(k))
		case strings.IndexByte(k, 0) >= 0:
			return Invalid(field, "key must not contain a NUL byte")
		case len(config[k]) > maxConfigValueLen:
			return Invalid(field, "value must be at most %d bytes, got %d", maxConfigValueLen, len(config[k]))
		}
	}
	// The keys Nimbus-HA reads itself are checked now, not when the
	// leader or a supervisor first acts on them (topologyconf.go).
	return checkTopologyKeys(config)
}

// checkNumWorkers checks spec.num_workers against the conf's
// topology.workers: either may give the count (num_workers 0 leaves it to
// the conf), and when both do they must agree.
func checkNumWorkers(n int32, config map[string]string) error {
	v, set := config[TopologyWorkers]
	field := "spec.config[" + showValue(TopologyWorkers) + "]"
	if set {
		if reason := topologyKeys[TopologyWorkers](v); reason != "" {
			return Invalid(field, "%s", reason)
		}
	}
	switch {
	case n == 0 && set:
		return nil
	case n == 0:
		return Invalid("spec.num_workers", "must be between 1 and %d (or 0 with %s in spec.config), got 0", maxNumWorkers, TopologyWorkers)
	case n < 1 || n > maxNumWorkers:
		return Invalid("spec.num_workers", "must be between 1 and %d, got %d", maxNumWorkers, n)
	case set:
		if w, _ := TopologyInt(config, TopologyWorkers); int32(w) != n {
			return Invalid(field, "is %d but spec.num_workers is %d; set one of them, or both alike", w, n)
		}
	}
	return nil
}

// checkOwner checks the owner, which is shown in listings and logs, so
// it must not carry terminal control sequences.
func checkOwner(field, owner string) error {
	switch {
	case len(owner) > maxOwnerLen:
		return Invalid(field, "must be at most %d bytes, got %d: %s", maxOwnerLen, len(owner), showValue(owner))
	case !utf8.ValidString(owner):
		return Invalid(field, "must be valid UTF-8, got %s", showValue(owner))
	case strings.IndexFunc(owner, unicode.IsControl) >= 0:
		return Invalid(field, "must not contain control characters, got %s", showValue(owner))
	}
	return nil
}

// A nil request is an empty one (proto3 semantics): its empty name fails
// the name check first, so the request validators below never dereference
// a nil request.

func Kill(req *nimbusv1.KillTopologyRequest) error {
	if err := TopologyName("name", req.GetName()); err != nil {
		return err
	}
	return checkWaitSecs(req.WaitSecs)
}

// maxForgetReason bounds ForgetTopology's reason: an audit line, not a
// document.
const maxForgetReason = 512

// Forget checks a ForgetTopology request: a topology name or id (ids are
// valid names), and a short printable reason.
func Forget(req *nimbusv1.ForgetTopologyRequest) error {
	if err := TopologyName("name", req.GetName()); err != nil && TopologyID("name", req.GetName()) != nil {
		return err
	}
	r := req.GetReason()
	if len(r) > maxForgetReason {
		return Invalid("reason", "is %d bytes; at most %d", len(r), maxForgetReason)
	}
	if !utf8.ValidString(r) || strings.ContainsFunc(r, unicode.IsControl) {
		return Invalid("reason", "must be printable UTF-8 on one line")
	}
	return nil
}

// maxHostLen bounds a host name (RFC 1035: 253 characters).
const maxHostLen = 253

// HandOver checks a HandOver request: to is empty (the next eligible
// nimbus) or a nimbus's address, host:port with a port in 1-65535.
func HandOver(req *nimbusv1.HandOverRequest) error {
	if req.GetTo() == "" {
		return nil
	}
	_, _, err := HostPort("to", req.GetTo())
	return err
}

// RestartWorker checks a RestartWorker request: a topology name or id and
// a worker as host:port.
func RestartWorker(req *nimbusv1.RestartWorkerRequest) error {
	if err := TopologyName("name", req.GetName()); err != nil && TopologyID("name", req.GetName()) != nil {
		return err
	}
	_, _, err := HostPort("worker", req.GetWorker())
	return err
}

// HostPort splits field's value, host:port, into a host and a port from 1
// to 65535.
func HostPort(field, v string) (string, int32, error) {
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return "", 0, Invalid(field, "must be host:port, got %s", showValue(v))
	}
	if host == "" || len(host) > maxHostLen || strings.ContainsFunc(host, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return "", 0, Invalid(field, "has no valid host: %s", showValue(v))
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return "", 0, Invalid(field, "has port %s; want 1-65535", showValue(port))
	}
	return host, int32(p), nil
}

// Bounds of a GetClusterInfo request's filters: enough for any screen or
// script, small enough that matching them costs nothing.
const (
	maxClusterFilters   = 1000
	maxSupervisorFilter = 256
)

// GetClusterInfo checks a GetClusterInfo request's filters and page size.
// The page token is the view's to parse (nimbus), and it names the field
// when it does not.
func GetClusterInfo(req *nimbusv1.GetClusterInfoRequest) error {
	if n := req.GetPageSize(); n < 0 {
		return Invalid("page_size", "must be 0 (no limit) or more, got %d", n)
	}
	if n := len(req.GetTopologies()); n > maxClusterFilters {
		return Invalid("topologies", "must have at most %d entries, got %d", maxClusterFilters, n)
	}
	for i, t := range req.GetTopologies() {
		field := fmt.Sprintf("topologies[%d]", i)
		if err := TopologyName(field, t); err != nil && TopologyID(field, t) != nil {
			return err
		}
	}
	if n := len(req.GetSupervisors()); n > maxClusterFilters {
		return Invalid("supervisors", "must have at most %d entries, got %d", maxClusterFilters, n)
	}
	for i, s := range req.GetSupervisors() {
		if len(s) == 0 || len(s) > maxSupervisorFilter || !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsSpace) ||
			strings.ContainsFunc(s, unicode.IsControl) {
			return Invalid(fmt.Sprintf("supervisors[%d]", i), "must be a supervisor id or host: 1 to %d printable bytes without spaces, got %s",
				maxSupervisorFilter, showValue(s))
		}
	}
	return nil
}

func Activate(req *nimbusv1.ActivateTopologyRequest) error {
	return TopologyName("name", req.GetName())
}

func Deactivate(req *nimbusv1.DeactivateTopologyRequest) error {
	return TopologyName("name", req.GetName())
}

func GetTopologyInfo(req *nimbusv1.GetTopologyInfoRequest) error {
	if err := TopologyName("name", req.GetName()); err != nil {
		return err
	}
	return Window("window", req.GetWindow())
}

// shortened cuts a value quoted in an error to 64 bytes.
func shortened(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// Window checks a stats window: one of Storm's ("600", "10800", "86400",
// ":all-time"), or "" for all time.
func Window(field, w string) error {
	if _, err := stats.ParseWindow(w); err != nil {
		return Invalid(field, "want 600, 10800, 86400 or :all-time, got %q", shortened(w))
	}
	return nil
}

func GetTopologyConf(req *nimbusv1.GetTopologyConfRequest) error {
	return TopologyName("name", req.GetName())
}

func Rebalance(req *nimbusv1.RebalanceTopologyRequest) error {
	if err := TopologyName("name", req.GetName()); err != nil {
		return err
	}
	if err := checkWaitSecs(req.WaitSecs); err != nil {
		return err
	}
	if req.NumWorkers != nil {
		if n := *req.NumWorkers; n < 1 || n > maxNumWorkers {
			return Invalid("num_workers", "must be between 1 and %d, got %d", maxNumWorkers, n)
		}
	}
	cp := req.GetComponentParallelism()
	if len(cp) > maxComponents {
		return Invalid("component_parallelism", "must have at most %d entries, got %d", maxComponents, len(cp))
	}
	var executors int64
	for _, id := range slices.Sorted(maps.Keys(cp)) {
		field := "component_parallelism[" + showValue(id) + "]"
		if reason := componentIDProblem(id); reason != "" {
			return Invalid(field, "key %s", reason)
		}
		if err := checkParallelism(field, cp[id]); err != nil {
			return err
		}
		executors += int64(cp[id])
	}
	// The components not named keep theirs: the leader checks the total
	// against what ZooKeeper can hold.
	if executors > maxExecutors {
		return Invalid("component_parallelism", "total parallelism (executors) must be at most %d, got %d", maxExecutors, executors)
	}
	return nil
}

// checkWaitSecs checks an optional wait_secs; unset means the default.
func checkWaitSecs(w *int32) error {
	if w != nil && (*w < 0 || *w > maxWaitSecs) {
		return Invalid("wait_secs", "must be between 0 and %d, got %d", maxWaitSecs, *w)
	}
	return nil
}

// NewTopologyID builds a topology id, <name>-<counter>-<launch-unix-secs>, as
// Storm does. Callers pass a valid name, a non-negative counter and a
// launch time not before 1970; TopologyID accepts the result.
func NewTopologyID(name string, counter int64, launch time.Time) string {
	return name + "-" + strconv.FormatInt(counter, 10) + "-" + strconv.FormatInt(launch.Unix(), 10)
}

// TopologyID checks a topology id. Ids are directory names and ZK
// node names, so the name part must follow the name rules.
func TopologyID(field, id string) error {
	_, _, _, err := SplitTopologyID(field, id)
	return err
}

// SplitTopologyID parses an id from the right, since names may contain
// '-' but the two numbers cannot. Leading zeros are accepted so that a
// zero-padded ZooKeeper sequence number parses.
func SplitTopologyID(field, id string) (name string, counter, secs int64, err error) {
	rest, secsPart, ok := cutLast(id, "-")
	if !ok {
		return "", 0, 0, Invalid(field, "%s, got %s", topologyIDShape, showValue(id))
	}
	name, counterPart, ok := cutLast(rest, "-")
	if !ok {
		return "", 0, 0, Invalid(field, "%s, got %s", topologyIDShape, showValue(id))
	}
	if reason := topologyNameProblem(name); reason != "" {
		return "", 0, 0, Invalid(field, "name part %s, in %s", reason, showValue(id))
	}
	if counter, ok = parseDecimal(counterPart); !ok {
		return "", 0, 0, Invalid(field, "counter %s and fit in 64 bits, got %s in %s", topologyIDNumberRule, showValue(counterPart), showValue(id))
	}
	if secs, ok = parseDecimal(secsPart); !ok {
		return "", 0, 0, Invalid(field, "launch secs %s and fit in 64 bits, got %s in %s", topologyIDNumberRule, showValue(secsPart), showValue(id))
	}
	return name, counter, secs, nil
}

// parseDecimal parses a non-negative decimal int64 made of digits only;
// strconv.ParseInt alone would also take a sign.
func parseDecimal(s string) (int64, bool) {
	if s == "" || !onlyBytes(s, isDigit) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// CodeFileName checks the name of one file of a code bundle: it is
// joined to the topology's code directory, so it must be a single path
// element.
func CodeFileName(field, name string) error {
	if name == "" || len(name) > maxCodeFileNameLen || name == "." || name == ".." || !onlyBytes(name, isNameByte) {
		return Invalid(field, "%s, got %s", codeFileNameRule, showValue(name))
	}
	return nil
}

func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

func onlyBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

// isNameByte is [A-Za-z0-9_.-]; no '/' or '\\', so a name is one path element.
func isNameByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || isDigit(b) || b == '_' || b == '.' || b == '-'
}

// isComponentIDByte is [A-Za-z0-9_.:-].
func isComponentIDByte(b byte) bool { return isNameByte(b) || b == ':' }

// showValue quotes a client-supplied string for an error message,
// truncated so that a huge value cannot bloat errors and logs.
func showValue(s string) string {
	if len(s) <= maxShownValueLen {
		return strconv.Quote(s)
	}
	// Back off to a rune start, so that a multi-byte character is not
	// shown as escaped halves.
	cut := maxShownValueLen
	for i := 0; i < utf8.UTFMax-1 && !utf8.RuneStart(s[cut]); i++ {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:cut]), len(s))
}
